"""``POST /v1/logs``: GenAI events sent as OTLP log records, on the traces receiver's terms.

The same bearer token, Content-Type and Content-Encoding handling, body limit, bytes-in-flight
reservation, memory admission (429/503 with ``Retry-After``) and write-ahead log as
``/v1/traces``: a request is acknowledged only once its records are durable, so a restart
replays them. Records that are not GenAI events are acknowledged and dropped (counted);
records over the decode bounds, without a span id, or dropped by the join are named in the
OTLP partial-success answer. What becomes of each record is the ingest stage's (``log_join``).
"""

from __future__ import annotations

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from starlette.routing import Route

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.ingest.log_records import decode_logs_json, decode_logs_protobuf
from mast_otel.processors.service.auth.throttle import AuthThrottle
from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
from mast_otel.processors.service.receivers.otlp_export import Signal, export_route

PATH = "/v1/logs"


def logs_route(stage: IngestStage, config: ProcessorConfig, throttle: AuthThrottle) -> Route:
    """``POST /v1/logs`` as a plain Starlette route (it checks the bearer token itself)."""
    return export_route(Signal(PATH, "logs body", decode_logs_json, decode_logs_protobuf, stage.ingest_logs,
                               stage.answer_logs, ExportLogsServiceResponse()), stage, config, throttle)
