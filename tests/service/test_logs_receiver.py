"""GenAI content sent as OTLP log records, through the SDK's real log exporters, joined to its spans.

An agent loops: six identical tool calls. With the calls' arguments and results on the spans the
real detectors find FM-1.3; with no content anywhere they cannot. The same run with its content
only in log records, sent before the spans or after them, over HTTP or gRPC, must be diagnosed
as the content-on-spans run is.
"""

from __future__ import annotations

import json

import httpx
import pytest
from opentelemetry import trace
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel.wire import attributes as A
from tests.service.support import make_config, metric, running, wait_for

CALLS = 6
ARGS, RESULT = json.dumps({"query": "error rate checkout"}), "no results"


def _agent_run(content_on_spans: bool, content_in_logs: bool):
    """One looping run, recorded (not sent): its spans and its log records, and the trace id."""
    spans_out, logs_out = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "sre-agent"}))
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans_out))
    logger_provider = LoggerProvider(resource=Resource.create({"service.name": "sre-agent"}))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs_out))
    tracer, logger = tracer_provider.get_tracer("tests.logs"), logger_provider.get_logger("tests.logs")
    with tracer.start_as_current_span("invoke_agent triage", attributes={
            A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT, A.GEN_AI_AGENT_NAME: "triage"}) as root:
        for i in range(CALLS):
            with tracer.start_as_current_span("chat gpt-4o", attributes={
                    A.GEN_AI_OPERATION_NAME: A.OP_CHAT, A.GEN_AI_REQUEST_MODEL: "gpt-4o", A.GEN_AI_PROVIDER_NAME: "openai"}):
                pass
            attrs = {A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL, A.GEN_AI_TOOL_NAME: "search_logs"}
            if content_on_spans:
                attrs.update({A.GEN_AI_TOOL_CALL_ARGUMENTS: ARGS, A.GEN_AI_TOOL_CALL_RESULT: RESULT})
            with tracer.start_as_current_span("execute_tool search_logs", attributes=attrs) as tool:
                if content_in_logs:
                    ctx = trace.set_span_in_context(tool)
                    logger.emit(LogRecord(context=ctx, event_name="gen_ai.tool.message", body={"content": ARGS, "id": f"c{i}"}))
                    logger.emit(LogRecord(context=ctx, event_name="gen_ai.choice", body={"index": 0, "message": {"content": RESULT}}))
                    logger.emit(LogRecord(context=ctx, body="tool ran", attributes={"logger.name": "app"}))  # not GenAI
        trace_id = format(root.get_span_context().trace_id, "032x")
    tracer_provider.shutdown()
    logger_provider.shutdown()
    return spans_out.get_finished_spans(), logs_out.get_finished_logs(), trace_id


def _exporters(server, protocol):
    if protocol == "grpc":
        endpoint = f"127.0.0.1:{server.grpc_port}"
        return GrpcSpanExporter(endpoint=endpoint, insecure=True), GrpcLogExporter(endpoint=endpoint, insecure=True)
    return (HttpSpanExporter(endpoint=f"{server.http_url}/v1/traces"),
            HttpLogExporter(endpoint=f"{server.http_url}/v1/logs", compression=Compression.Gzip))


def _modes(server, trace_id):
    response = httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}")
    return ([m["mode"] for m in response.json()["modes"]],) if response.status_code == 200 else None  # [] is an answer


def _diagnosed(tmp_path, protocol, order, content_on_spans, content_in_logs):
    config = make_config(tmp_path, assembly={"grace_seconds": 1.5})
    spans, logs, trace_id = _agent_run(content_on_spans, content_in_logs)
    with running(config, diagnose=None, live_detection=None) as server:
        span_exporter, log_exporter = _exporters(server, protocol)
        for send in order:
            if send == "spans":
                assert span_exporter.export(spans).name == "SUCCESS"
            elif logs:
                assert log_exporter.export(logs).name == "SUCCESS"
        (modes,) = wait_for(lambda: _modes(server, trace_id), timeout=20)
        counts = {name: metric(server, f"mast_log_records_{name}_total") for name in ("received", "joined")}
        counts["not_genai"] = metric(server, "mast_log_records_dropped_total", reason="not_genai")
        span_exporter.shutdown()
        log_exporter.shutdown()
    return modes, counts


def test_the_loop_is_found_with_content_on_spans_and_missed_without_content(tmp_path):
    with_content, _ = _diagnosed(tmp_path, "http", ("spans",), True, False)
    without, _ = _diagnosed(tmp_path / "off", "http", ("spans",), False, False)
    assert "FM-1.3" in with_content and "FM-1.3" not in without


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("order", [("logs", "spans"), ("spans", "logs")], ids=["logs-first", "spans-first"])
def test_content_in_log_records_is_diagnosed_as_content_on_spans(tmp_path, protocol, order):
    reference, _ = _diagnosed(tmp_path / "ref", protocol, ("spans",), True, False)
    modes, counts = _diagnosed(tmp_path, protocol, order, False, True)
    assert "FM-1.3" in reference
    assert modes == reference
    assert counts == {"received": 3 * CALLS, "joined": 2 * CALLS, "not_genai": CALLS}


def test_partial_success_names_records_without_a_span(tmp_path):
    body = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"eventName": "gen_ai.user.message", "body": {"stringValue": "hi"}},
        {"eventName": "gen_ai.user.message", "traceId": "5b8efff798038103d269b633813fc60c",
         "spanId": "eee19b7ec3c1b174", "body": {"stringValue": "hi"}},
        {"body": {"stringValue": "an app log line"}}]}]}]}
    with running(make_config(tmp_path)) as server:
        response = httpx.post(f"{server.http_url}/v1/logs", json=body)
        assert response.status_code == 200
        answer = response.json()
        assert answer["partialSuccess"]["rejectedLogRecords"] == "1" and "no_span_id=1" in answer["partialSuccess"]["errorMessage"]
        assert metric(server, "mast_log_records_received_total", protocol="http") == 3
        assert metric(server, "mast_log_records_dropped_total", reason="no_span_id") == 1
        assert metric(server, "mast_log_records_dropped_total", reason="not_genai") == 1
        proto = httpx.post(f"{server.http_url}/v1/logs", content=b"\x0a\x00", headers={"Content-Type": "application/x-protobuf"})
        assert proto.status_code == 200 and ExportLogsServiceResponse.FromString(proto.content) == ExportLogsServiceResponse()
        assert httpx.post(f"{server.http_url}/v1/logs", content=b"{no", headers={"Content-Type": "application/json"}).status_code == 400


def test_records_whose_span_never_comes_are_dropped_after_the_idle_timeout(tmp_path):
    config = make_config(tmp_path, assembly={"idle_timeout_seconds": 0.5})
    body = {"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"eventName": "gen_ai.user.message", "traceId": "5b8efff798038103d269b633813fc60c",
         "spanId": "eee19b7ec3c1b174", "body": {"stringValue": "hi"}}]}]}]}
    with running(config) as server:
        assert httpx.post(f"{server.http_url}/v1/logs", json=body).status_code == 200
        assert metric(server, "mast_log_records_dropped_total", reason="span_never_came") == 0
        wait_for(lambda: metric(server, "mast_log_records_dropped_total", reason="span_never_came") == 1)
        assert server.ingest.log_join.held_bytes == 0


def test_logs_refused_under_memory_pressure_and_without_the_token(tmp_path):
    config = make_config(tmp_path, receiver={"ingest_token": "s3cret", "max_body_bytes": 4096})
    body = {"resourceLogs": []}
    with running(config) as server:
        assert httpx.post(f"{server.http_url}/v1/logs", json=body).status_code == 401
        ok = httpx.post(f"{server.http_url}/v1/logs", json=body, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        auth = {"Authorization": "Bearer s3cret"}
        wrong_type = httpx.post(f"{server.http_url}/v1/logs", content=b"x", headers={**auth, "Content-Type": "text/plain"})
        assert wrong_type.status_code == 415
        too_big = httpx.post(f"{server.http_url}/v1/logs", content=b"\x0a" * (config.receiver.max_body_bytes + 1),
                             headers={**auth, "Content-Type": "application/x-protobuf"})
        assert too_big.status_code == 413
        server.ingest.memory.register("test_ballast", lambda: 10**12)
        refused = httpx.post(f"{server.http_url}/v1/logs", json=body, headers={"Authorization": "Bearer s3cret"})
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"


def test_records_held_past_the_trace_cap_are_dropped_over_budget_and_named(tmp_path):
    config = make_config(tmp_path, assembly={"max_bytes_per_trace": 2000})
    record = {"eventName": "gen_ai.user.message", "traceId": "5b8efff798038103d269b633813fc60c",
              "spanId": "eee19b7ec3c1b174", "body": {"stringValue": "x" * 300}}
    body = {"resourceLogs": [{"scopeLogs": [{"logRecords": [record] * 5}]}]}
    with running(config) as server:
        answer = httpx.post(f"{server.http_url}/v1/logs", json=body).json()["partialSuccess"]
        dropped = metric(server, "mast_log_records_dropped_total", reason="over_budget")
        assert 0 < dropped < 5 and answer["rejectedLogRecords"] == str(int(dropped))
        assert "over_budget" in answer["errorMessage"]
        assert 0 < server.ingest.log_join.held_bytes <= 2000
        assert metric(server, "mast_buffered_bytes") >= server.ingest.log_join.held_bytes  # charged to the account
