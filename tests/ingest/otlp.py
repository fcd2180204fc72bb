"""Test helpers: capture real SDK spans and encode them as OTLP protobuf and OTLP/JSON."""

from __future__ import annotations

import base64
import json
from typing import Any, Sequence

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ID_KEYS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")


def capture(service_name: str = "test-agent") -> tuple[TracerProvider, InMemorySpanExporter]:
    """A private tracer provider whose finished spans land in an in-memory exporter."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def request_of(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    return encode_spans(spans)


def protobuf_of(spans: Sequence[ReadableSpan]) -> bytes:
    return encode_spans(spans).SerializeToString()


def otlp_json_of(
    spans: Sequence[ReadableSpan] | ExportTraceServiceRequest, *, snake_case: bool = False, enum_names: bool = False
) -> bytes:
    """OTLP/JSON as the spec writes it: protobuf's JSON mapping with ids in hex."""
    request = spans if isinstance(spans, ExportTraceServiceRequest) else encode_spans(spans)
    doc = json_format.MessageToDict(
        request, preserving_proto_field_name=snake_case, use_integers_for_enums=not enum_names
    )
    return json.dumps(hex_ids(doc)).encode()


def hex_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (base64.b64decode(v).hex() if k in ID_KEYS and isinstance(v, str) else hex_ids(v)) for k, v in value.items()
        }
    if isinstance(value, list):
        return [hex_ids(v) for v in value]
    return value
