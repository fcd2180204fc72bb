"""Ingest: OTLP bodies and trace files in, normalized :class:`~mast_otel.processors.model.Span` s out.

- ``decode``: OTLP ``ExportTraceServiceRequest`` (protobuf or OTLP/JSON) -> spans, with
  span-level validation and partial rejection.
- ``normalize``: one pure function per span convention (OTel GenAI, OpenInference,
  OpenLLMetry, litellm, mast-otel's hints) from a span's name and attributes to ``Span`` fields.
- ``files``: trace files on disk (OTLP JSON, SDK span JSON, step-lists) -> runs.

Nothing is imported here: importing a submodule pulls in only what it needs.
"""
