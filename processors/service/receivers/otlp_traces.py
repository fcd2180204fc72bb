"""``POST /v1/traces``: spans over OTLP/HTTP, as the OTLP/HTTP specification says.

Protobuf or JSON by Content-Type, gzip by Content-Encoding, an ``ExportTraceServiceResponse``
encoded like the request (with ``partial_success`` when spans were rejected), a
``google.rpc.Status`` body for errors; the terms every signal shares are ``otlp_export``'s.
"""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.routing import Route

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.ingest.decode import decode_json, decode_protobuf
from mast_otel.processors.service.auth.throttle import AuthThrottle
from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
from mast_otel.processors.service.receivers.otlp_export import Signal, export_route

PATH = "/v1/traces"


def traces_route(stage: IngestStage, config: ProcessorConfig, throttle: AuthThrottle) -> Route:
    """``POST /v1/traces`` as a plain Starlette route (it checks the bearer token itself)."""
    return export_route(Signal(PATH, "body", decode_json, decode_protobuf, stage.ingest, stage.answer_logged,
                               ExportTraceServiceResponse()), stage, config, throttle)
