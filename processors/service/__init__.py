"""The processor service: OTLP receivers -> streaming assembly -> detection -> store, metrics, re-export.

Its parts, each a sub-package that imports only ``component`` and the parts listed below it::

    api/        where diagnoses are served: the FastAPI app (with the OTLP/HTTP route on its port)
    receivers/  where spans enter: OTLP/gRPC, the HTTP port's limits and drain, the receiver components
    pipeline/   where a run is assembled and diagnosed: ingest stage, assembler, merge stage
    outputs/    where a diagnosis goes: store, Prometheus, OTLP re-export, webhook, sessions, judge
    wal/        the write-ahead log of accepted spans
    store/      where runs and conversations are kept: diagnoses, step lists, databases, schema
    auth/       tokens, throttling of failed attempts, web logouts (not agent sessions)
    memory/     the memory account and the request bytes in flight
    telemetry/  the processor's own Prometheus metrics

Nothing is imported here; each module pulls in only what it needs. At the top stay the host
(``server.ProcessorServer``, which wires the parts together for ``mast-otel serve``, the demo
and the tests), the lifecycle every part implements (``component``) and the factories that
build receivers and exporters from the configuration (``factories``).
"""
