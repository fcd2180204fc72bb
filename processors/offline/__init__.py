"""Offline diagnosis: ``mast-otel analyze`` (what went wrong in these runs) and ``mast-otel eval``
(how well detection agrees with labels). Pure aggregation and scoring live in ``summary`` and
``scoring``; the commands only load, call and print."""
