"""Log records as GenAI events: requests built by the OpenTelemetry SDK's own log encoder."""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format
from opentelemetry import trace
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider

from mast_otel.processors.ingest.decode import DecodeError, DecodeOptions
from mast_otel.processors.ingest.log_records import (
    decode_logs_json, decode_logs_protobuf, record_event,
)


def _records(emit) -> bytes:
    """The serialized request the SDK's OTLP log exporters would send for what ``emit`` logs."""
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    emit(provider.get_logger("tests.logs"))
    provider.shutdown()
    return encode_logs(exporter.get_finished_logs()).SerializeToString()


def _in_span(emit):
    """Runs ``emit(logger, context)`` inside a real span; returns (body, trace id hex, span id hex)."""
    tracer = TracerProvider().get_tracer("tests.logs")
    with tracer.start_as_current_span("execute_tool lookup") as span:
        ctx = trace.set_span_in_context(span)
        body = _records(lambda logger: emit(logger, ctx))
        sc = span.get_span_context()
    return body, format(sc.trace_id, "032x"), format(sc.span_id, "016x")


def test_per_message_records_become_events_of_their_span():
    def emit(logger, ctx):
        logger.emit(LogRecord(context=ctx, event_name="gen_ai.tool.message", body={"content": '{"q": "x"}', "id": "c1"},
                              attributes={"gen_ai.system": "openai"}))
        logger.emit(LogRecord(context=ctx, event_name="gen_ai.choice", body={"index": 0, "finish_reason": "stop",
                                                                             "message": {"content": "done"}}))
        logger.emit(LogRecord(context=ctx, body="an application log line", attributes={"logger": "app"}))

    body, trace_id, span_id = _in_span(emit)
    batch = decode_logs_protobuf(body)
    assert batch.records == 3 and batch.not_genai == 1 and batch.no_span_id == 0 and not batch.rejected
    assert [(e.trace_id, e.span_id, e.event[0]) for e in batch.events] == [
        (trace_id, span_id, "gen_ai.tool.message"), (trace_id, span_id, "gen_ai.choice")]
    tool = batch.events[0].event[1]
    assert tool == {"gen_ai.system": "openai", "content": '{"q": "x"}', "id": "c1"}  # body keys added where absent
    choice = batch.events[1].event[1]
    assert choice["message"] == {"content": "done"} and choice["finish_reason"] == "stop"
    assert all(e.size > 0 for e in batch.events)


def test_the_name_comes_from_the_field_then_event_name_then_gen_ai_event_name():
    def emit(logger, ctx):
        logger.emit(LogRecord(context=ctx, body="hi", attributes={"event.name": "gen_ai.user.message"}))
        logger.emit(LogRecord(context=ctx, body="sys", attributes={"gen_ai.event.name": "gen_ai.system.message"}))
        logger.emit(LogRecord(context=ctx, event_name="gen_ai.choice", body="x", attributes={"event.name": "other"}))

    body, _, _ = _in_span(emit)
    events = [e.event for e in decode_logs_protobuf(body).events]
    assert [name for name, _ in events] == ["gen_ai.user.message", "gen_ai.system.message", "gen_ai.choice"]
    assert events[0][1]["content"] == "hi"  # a body that is not a map goes under content


def test_genai_records_without_a_span_are_counted_not_kept():
    body = _records(lambda logger: logger.emit(LogRecord(event_name="gen_ai.user.message", body="hi")))
    batch = decode_logs_protobuf(body)
    assert batch.records == 1 and batch.no_span_id == 1 and batch.events == []


def test_operation_details_record_keeps_structured_attributes():
    messages = [{"role": "user", "parts": [{"type": "text", "content": "find the bug"}]}]

    def emit(logger, ctx):
        logger.emit(LogRecord(context=ctx, event_name="gen_ai.client.inference.operation.details", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(messages),
            "gen_ai.request.model": "gpt-4o", "blob": b"\x00\x01"}))

    body, _, _ = _in_span(emit)
    (event,) = decode_logs_protobuf(body).events
    name, attrs = event.event
    assert name == "gen_ai.client.inference.operation.details"
    assert json.loads(attrs["gen_ai.input.messages"]) == messages
    assert attrs["blob"] == "AAE="  # bytes as base64 text


def test_json_with_hex_ids_reads_as_the_protobuf_does():
    def emit(logger, ctx):
        logger.emit(LogRecord(context=ctx, event_name="gen_ai.assistant.message",
                              body={"content": "ok", "tool_calls": [{"id": "1", "function": {"name": "grep"}}]}))
        logger.emit(LogRecord(context=ctx, body="plain"))

    body, trace_id, span_id = _in_span(emit)
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    doc = json_format.MessageToDict(ExportLogsServiceRequest.FromString(body))
    for rl in doc["resourceLogs"]:  # OTLP/JSON writes ids in hex, not protobuf JSON's base64
        for sl in rl["scopeLogs"]:
            for record in sl["logRecords"]:
                for key in ("traceId", "spanId"):
                    if key in record:
                        import base64

                        record[key] = base64.b64decode(record[key]).hex()
    from_json = decode_logs_json(json.dumps(doc).encode())
    from_proto = decode_logs_protobuf(body)
    assert [(e.trace_id, e.span_id, e.event) for e in from_json.events] == [
        (e.trace_id, e.span_id, e.event) for e in from_proto.events]
    assert from_json.events[0].trace_id == trace_id and from_json.events[0].span_id == span_id
    assert from_json.not_genai == 1


def test_bounds_apply_per_record():
    options = DecodeOptions(max_attributes=3, max_string_chars=10, max_value_depth=2)

    def emit(logger, ctx):
        logger.emit(LogRecord(context=ctx, event_name="gen_ai.user.message", attributes={f"k{i}": i for i in range(5)}))
        logger.emit(LogRecord(context=ctx, event_name="gen_ai.user.message", body="x" * 100))
        logger.emit(LogRecord(context=ctx, event_name="gen_ai.user.message", body={"a": {"b": {"c": {"d": 1}}}}))
        logger.emit(LogRecord(context=ctx, event_name="gen_ai.user.message", body="nul\x00"))

    body, _, _ = _in_span(emit)
    batch = decode_logs_protobuf(body, options)
    assert batch.rejected == {"too_many_attributes": 1, "attribute_too_deep": 1, "nul_character": 1}
    (kept,) = batch.events
    assert kept.event[1]["content"] == "x" * 10  # long strings truncated, as on spans
    assert len(batch.messages) == 3


def test_unreadable_bodies_raise():
    with pytest.raises(DecodeError):
        decode_logs_protobuf(b"\xff\xff\xff")
    with pytest.raises(DecodeError):
        decode_logs_json(b"{not json")
    with pytest.raises(DecodeError):
        decode_logs_json(b"[1]")


def test_record_event_keeps_attributes_over_body_keys():
    assert record_event("gen_ai.choice", {"content": "attr"}, {"content": "body", "index": 0}) == (
        "gen_ai.choice", {"content": "attr", "index": 0})
    assert record_event("gen_ai.user.message", {}, "") == ("gen_ai.user.message", {})
