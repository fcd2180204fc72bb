"""The processor service: OTLP receivers -> streaming assembly -> detection -> store, metrics, re-export.

Nothing is imported here; each module pulls in only what it needs. ``server.ProcessorServer``
wires the parts together for ``mast-otel serve``, the demo and the tests.
"""
