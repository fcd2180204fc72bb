"""A fault while normalizing one span costs that span alone, never its request.

Normalizing reads arbitrary content, so a value nobody foresaw can make it raise; before, the
exception failed the whole request (HTTP 500, every other span of it lost, and lost again on each
retry). The fault is injected here by wrapping the real normalizer so it raises for one span,
since the faults found so far are fixed (deep JSON, keys JSON cannot sort: test_hostile_input.py,
test_hash_keys.py). Expected: the span refused as ``normalize_failed`` with the fault's type and
place, its neighbours kept (their wire forms aligned for re-export), one ERROR line per distinct
fault, and neither the answer nor the log quoting the span's content.
"""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span as ProtoSpan

from mast_otel.processors.ingest import decode as D
from mast_otel.processors.ingest import normalize_failure
from mast_otel.processors.service.pipeline import log_join
from mast_otel.wire import attributes as A
from tests.service.support import make_config, metric, running, wait_for

SECRET = "sk-live-content-that-must-not-leak"
NOW = 1_760_000_000 * 10**9
TRACE = bytes.fromhex("5b8efff798038103d269b633813fc60c")


class InjectedFault(ValueError):
    pass


@pytest.fixture
def faulty(monkeypatch):
    """The real normalizer, raising (with the span's content in its message) for spans named ``boom``."""
    real = D.normalize_into

    def normalize_into(span, name, attrs, *args, **kwargs):
        if name == "boom":
            raise InjectedFault(f"cannot read {attrs.get(A.GEN_AI_TOOL_CALL_ARGUMENTS)}")
        return real(span, name, attrs, *args, **kwargs)

    monkeypatch.setattr(D, "normalize_into", normalize_into)
    monkeypatch.setattr(normalize_failure, "_logged", set())


def _span(span_id: int, name: str, parent: int = 0) -> ProtoSpan:
    attrs = {A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL, A.GEN_AI_TOOL_NAME: "kubectl",
             A.GEN_AI_TOOL_CALL_ARGUMENTS: json.dumps({"token": SECRET})}
    if name.startswith("invoke_agent"):
        attrs = {A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT, A.GEN_AI_AGENT_NAME: "triage"}
    return ProtoSpan(trace_id=TRACE, span_id=span_id.to_bytes(8, "big"), parent_span_id=parent.to_bytes(8, "big") if parent else b"",
                     name=name, start_time_unix_nano=NOW + span_id, end_time_unix_nano=NOW + 10**9,
                     attributes=[KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in attrs.items()])


def _request(*names: str) -> ExportTraceServiceRequest:
    spans = [_span(1, "invoke_agent triage")] + [_span(i + 2, name, parent=1) for i, name in enumerate(names)]
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])


def _decoded(request: ExportTraceServiceRequest, encoding: str, fast: bool, keep_raw: bool) -> D.DecodeResult:
    options = D.DecodeOptions(fast=fast, keep_raw=keep_raw)
    if encoding == "protobuf":
        return D.decode_protobuf(request.SerializeToString(), options)
    from google.protobuf import json_format

    return D.decode_json(json_format.MessageToJson(request).encode(), options)


@pytest.mark.parametrize("keep_raw", [False, True], ids=["plain", "re-exported"])
@pytest.mark.parametrize("fast", [True, False], ids=["shortcuts", "plain"])
@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_a_span_whose_normalizing_raises_is_refused_alone(faulty, caplog, encoding, fast, keep_raw):
    with caplog.at_level(logging.ERROR, logger="mast_otel.processors.ingest"):
        result = _decoded(_request("execute_tool kubectl", "boom", "execute_tool kubectl", "boom"), encoding, fast, keep_raw)
    assert result.rejected == {D.NORMALIZE_FAILED: 2}
    assert [s.span_id for s in result.spans] == [f"{i:016x}" for i in (1, 2, 4)]
    assert all(s.tool_name == "kubectl" and s.args_hash for s in result.spans[1:])  # the neighbours read as ever
    if keep_raw:
        assert [ProtoSpan.FromString(w.raw).span_id.hex() for w in result.wire] == [s.span_id for s in result.spans]
    assert "InjectedFault at" in result.error_message and "test_normalize_failure.py" in result.error_message
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "InjectedFault" in errors[0]  # the second span's fault is the same fault: not logged again
    assert SECRET not in result.error_message and not any(SECRET in e for e in errors)


def test_the_server_answers_partial_success_and_diagnoses_the_rest(faulty, tmp_path, caplog):
    with running(make_config(tmp_path), diagnose=None, live_detection=None) as server:
        body = _request("execute_tool kubectl", "boom").SerializeToString()
        response = httpx.post(f"{server.http_url}/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"})
        assert response.status_code == 200
        partial = ExportTraceServiceResponse.FromString(response.content).partial_success
        assert partial.rejected_spans == 1 and "normalize_failed" in partial.error_message and SECRET not in partial.error_message
        assert metric(server, "mast_spans_rejected_total", reason="normalize_failed") == 1
        steps = wait_for(lambda: (r := httpx.get(f"{server.http_url}/v1/diagnoses/{TRACE.hex()}?include=steps")).status_code == 200
                         and r.json()["steps"])
        assert sorted(s["span_id"] for s in steps) == [f"{i:016x}" for i in (1, 2)]
    assert SECRET not in caplog.text


def test_log_records_whose_content_cannot_be_read_are_dropped_and_counted(tmp_path, monkeypatch):
    """Records for a span already buffered are read into it under the ingest stage's lock, after
    the request is in the write-ahead log: a fault there must not fail the request either."""
    real = log_join.add_event_content

    def add_event_content(span, events, *args, **kwargs):
        if span.name == "execute_tool broken":
            raise InjectedFault("cannot read")
        return real(span, events, *args, **kwargs)

    monkeypatch.setattr(log_join, "add_event_content", add_event_content)
    config = make_config(tmp_path, assembly={"grace_seconds": 30})
    records = [{"eventName": "gen_ai.tool.message", "traceId": TRACE.hex(), "spanId": f"{i:016x}",
                "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "ok"}}]}}} for i in (2, 3)]
    with running(config, diagnose=None, live_detection=None) as server:
        spans = _request("execute_tool kubectl", "execute_tool broken").SerializeToString()
        assert httpx.post(f"{server.http_url}/v1/traces", content=spans, headers={"Content-Type": "application/x-protobuf"}).status_code == 200
        response = httpx.post(f"{server.http_url}/v1/logs", json={"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]})
        assert response.status_code == 200
        assert metric(server, "mast_log_records_dropped_total", reason="normalize_failed") == 1
        assert metric(server, "mast_log_records_joined_total") == 1
