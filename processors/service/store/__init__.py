"""Where runs and conversations are kept, in embedded SQLite or in a PostgreSQL shared by replicas
(``database``, with the schema as numbered migrations in ``schema``): each run's diagnosis and the
metric accounting that keeps counts exact across restarts (``diagnoses``, ``accounting``), its
compact step list (``run_steps``), and sessions' turns and diagnoses (``conversations``).
``span_codec`` is the JSON form of spans kept there (a re-routed run's, a session's turns) and
``compact_json`` writes step lists, findings and accounting fast. It imports no other part of
the service.
"""
