"""Outputs of a diagnosis, each behind :class:`~.base.DiagnosisExporter`: the SQLite store,
Prometheus metrics, OTLP re-export (any number of endpoints), the judge trigger, a webhook."""
