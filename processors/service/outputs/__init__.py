"""Outputs of a diagnosis, each behind :class:`~.base.DiagnosisExporter`: the store, Prometheus
metrics, OTLP re-export (any number of endpoints; ``otlp_reexport`` encodes and queues), the
sessions tracker, the judge trigger, a webhook."""
