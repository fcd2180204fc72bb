"""OTLP receivers on the wire: responses per the OTLP spec for good, partial, bad and hostile input."""

from __future__ import annotations

import gzip
import json
import os

import grpc
import httpx
import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel.wire import attributes as A
from tests.service.support import emit_run, make_config, metric, provider_for, running, wait_for

PB = {"Content-Type": "application/x-protobuf"}
NOW = 1_760_000_000_000_000_000


def proto_span(trace_id: bytes, span_id: bytes, name: str = "chat gpt-4o", parent: bytes = b"", start: int = NOW, end: int = NOW + 10**9, **attrs):
    attrs = attrs or {A.GEN_AI_OPERATION_NAME: "chat", A.GEN_AI_REQUEST_MODEL: "gpt-4o"}
    return ProtoSpan(
        trace_id=trace_id, span_id=span_id, parent_span_id=parent, name=name, start_time_unix_nano=start, end_time_unix_nano=end,
        attributes=[KeyValue(key=k, value=AnyValue(string_value=str(v))) for k, v in attrs.items()],
    )


def request_of(*spans: ProtoSpan) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.add(key="service.name", value=AnyValue(string_value="svc"))
    rs.scope_spans.add().spans.extend(spans)
    return req


def post(server, body: bytes, headers=PB) -> httpx.Response:
    return httpx.post(f"{server.http_url}/v1/traces", content=body, headers=headers)


def status_of(response: httpx.Response) -> status_pb2.Status:
    return status_pb2.Status.FromString(response.content)


def test_partial_success_reports_rejected_spans_and_keeps_the_rest(config):
    tid = os.urandom(16)
    good = proto_span(tid, os.urandom(8))
    bad_id = proto_span(tid, b"\x01\x02")
    backwards = proto_span(tid, os.urandom(8), start=NOW + 10**9, end=NOW)
    with running(config) as server:
        r = post(server, request_of(good, bad_id, backwards).SerializeToString())
        assert r.status_code == 200 and r.headers["content-type"] == "application/x-protobuf"
        body = ExportTraceServiceResponse.FromString(r.content)
        assert body.partial_success.rejected_spans == 2
        assert "invalid_span_id" in body.partial_success.error_message and "end_before_start" in body.partial_success.error_message
        assert metric(server, "mast_spans_received_total", protocol="http") == 1
        assert metric(server, "mast_spans_rejected_total", reason="invalid_span_id") == 1
        assert metric(server, "mast_spans_rejected_total", reason="end_before_start") == 1


def test_json_request_gets_a_json_response(config):
    with running(config) as server:
        doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
            {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "chat m", "startTimeUnixNano": str(NOW), "endTimeUnixNano": str(NOW + 5),
             "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]},
            {"traceId": "00" * 16, "spanId": "cd" * 8, "name": "x", "startTimeUnixNano": str(NOW), "endTimeUnixNano": str(NOW)},
        ]}]}]}
        r = post(server, json.dumps(doc).encode(), {"Content-Type": "application/json"})
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        assert r.json()["partialSuccess"]["rejectedSpans"] in ("1", 1)
        ok = post(server, json.dumps({"resourceSpans": []}).encode(), {"Content-Type": "application/json"})
        assert ok.status_code == 200 and ok.json() == {}


@pytest.mark.parametrize("body, headers, needle", [
    (b"\xff\xff\xff\xff not protobuf", PB, "undecodable"),
    (request_of(proto_span(b"\x01" * 16, b"\x02" * 8)).SerializeToString()[:-7], PB, ""),  # truncated
    (b"{not json", {"Content-Type": "application/json"}, "undecodable"),
    (b"[1, 2, 3]", {"Content-Type": "application/json"}, "undecodable"),
    (b"\x1f\x8b\x08\x00garbage", {**PB, "Content-Encoding": "gzip"}, "gzip"),
    (gzip.compress(b"x" * 1000)[:-12], {**PB, "Content-Encoding": "gzip"}, "truncated"),
    (b"abc", {**PB, "Content-Encoding": "br"}, "Content-Encoding"),
])
def test_undecodable_bodies_get_400_with_a_status(config, body, headers, needle):
    with running(config) as server:
        r = post(server, body, headers)
        assert r.status_code == 400, r.content
        message = r.json()["message"] if "json" in headers["Content-Type"] else status_of(r).message
        assert needle in message and message


def test_truncated_protobuf_is_400_or_salvaged_never_500(config):
    body = request_of(*(proto_span(os.urandom(16), os.urandom(8)) for _ in range(5))).SerializeToString()
    with running(config) as server:
        for cut in range(1, len(body), 37):
            r = post(server, body[:cut])
            assert r.status_code in (200, 400), (cut, r.status_code)
        assert httpx.get(f"{server.http_url}/healthz").status_code == 200


def test_unsupported_content_type_is_415(config):
    with running(config) as server:
        assert post(server, b"hello", {"Content-Type": "text/plain"}).status_code == 415


def test_oversized_and_zip_bomb_bodies_get_413(tmp_path):
    config = make_config(tmp_path, receiver={"max_body_bytes": 64 * 1024})
    with running(config) as server:
        big = request_of(proto_span(os.urandom(16), os.urandom(8), name="x" * 100_000)).SerializeToString()
        r = post(server, big)
        assert r.status_code == 413 and "limit" in status_of(r).message
        bomb = gzip.compress(b"\0" * (50 * 1024 * 1024), 9)  # 50 MB of zeros in ~50 KB
        assert len(bomb) < 64 * 1024
        r = post(server, bomb, {**PB, "Content-Encoding": "gzip"})
        assert r.status_code == 413 and "decompressed" in status_of(r).message
        # Content-Length alone is enough to refuse without reading.
        r = httpx.post(f"{server.http_url}/v1/traces", content=iter([b"x" * 1024] * 100), headers={**PB, "Content-Length": str(100 * 1024)})
        assert r.status_code == 413
        assert metric(server, "mast_ingest_refused_requests_total", reason="body_too_large") == 3
        # An OTLP exporter does not retry a 413: the counter's help must not say every refusal is retried.
        [help_line] = [line for line in httpx.get(f"{server.http_url}/metrics").text.splitlines()
                       if line.startswith("# HELP mast_ingest_refused_requests_total ")]
        assert "413" in help_line and "final" in help_line, help_line


def test_duplicate_spans_are_counted_once(config):
    tid = os.urandom(16)
    spans = [proto_span(tid, os.urandom(8)) for _ in range(3)]
    body = request_of(*spans).SerializeToString()
    with running(config) as server:
        for _ in range(3):  # an exporter retrying the same batch
            assert post(server, body).status_code == 200
        assert metric(server, "mast_spans_received_total") == 3
        assert metric(server, "mast_duplicate_spans_total") == 6
        d = wait_for(lambda: server.store.get(tid.hex()), timeout=40)
        assert d.span_count == 3


def test_backpressure_then_recovery_over_http_and_grpc(tmp_path):
    config = make_config(tmp_path, assembly={"max_buffered_bytes": 4000, "pressure_eviction_seconds": 1.0, "span_overhead_bytes": 464})
    tid = os.urandom(16)
    # 7 buffered spans (600 estimated bytes each: 464 + 136 received) are over the budget but under the eviction
    # limit; their parent never arrives, so only pressure eviction can free the budget.
    first = request_of(*(proto_span(tid, os.urandom(8), parent=b"\x09" * 8) for _ in range(7))).SerializeToString()
    with running(config) as server:
        assert post(server, first).status_code == 200  # fills the budget
        r = post(server, request_of(proto_span(os.urandom(16), os.urandom(8))).SerializeToString())
        assert r.status_code == 429 and r.headers["retry-after"] == "1" and "memory budget" in status_of(r).message
        stub = TraceServiceStub(grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}"))
        with pytest.raises(grpc.RpcError) as info:
            stub.Export(request_of(proto_span(os.urandom(16), os.urandom(8))))
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert any(k == "google.rpc.retryinfo-bin" for k, _ in info.value.trailing_metadata())
        assert metric(server, "mast_ingest_refused_requests_total", reason="over_budget") == 2
        # Over budget for longer than pressure_eviction_seconds: the trace is evicted, diagnosed.
        d = wait_for(lambda: server.store.get(tid.hex()))
        assert d.completion == "evicted" and d.span_count == 7
        assert metric(server, "mast_traces_evicted_total", reason="max_buffered_bytes") == 1
        assert metric(server, "mast_buffered_bytes") == 0
        # A real exporter gets through again.
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_id, _ = emit_run(provider)
        provider.shutdown()
        wait_for(lambda: server.store.get(trace_id))


def test_shutdown_answers_503_and_unavailable(config):
    with running(config) as server:
        server.ingest._stopping = True  # what stop() sets first
        try:
            r = post(server, request_of(proto_span(os.urandom(16), os.urandom(8))).SerializeToString())
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
            stub = TraceServiceStub(grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}"))
            with pytest.raises(grpc.RpcError) as info:
                stub.Export(request_of(proto_span(os.urandom(16), os.urandom(8))))
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        finally:
            server.ingest._stopping = False


def test_bearer_tokens_guard_ingest_and_api_separately(tmp_path):
    config = make_config(tmp_path, receiver={"ingest_token": "in-secret", "api_token": "api-secret"})
    body = request_of(proto_span(os.urandom(16), os.urandom(8))).SerializeToString()
    with running(config) as server:
        assert post(server, body).status_code == 401
        assert post(server, body, {**PB, "Authorization": "Bearer api-secret"}).status_code == 401
        assert post(server, body, {**PB, "Authorization": "Bearer in-secret"}).status_code == 200
        url = f"{server.http_url}/v1/diagnoses"
        assert httpx.get(url).status_code == 401
        assert httpx.get(url, headers={"Authorization": "Bearer in-secret"}).status_code == 401
        assert httpx.get(url, headers={"Authorization": "bearer api-secret"}).status_code == 200
        assert httpx.get(f"{server.http_url}/healthz").status_code == 200
        # gRPC: the real exporter with and without the header.
        memory = InMemorySpanExporter()
        provider = provider_for(memory)
        with provider.get_tracer("t").start_as_current_span("chat m", attributes={A.GEN_AI_OPERATION_NAME: "chat"}):
            pass
        spans = memory.get_finished_spans()
        target = f"127.0.0.1:{server.grpc_port}"
        assert GrpcExporter(endpoint=target, insecure=True).export(spans) == SpanExportResult.FAILURE
        good = GrpcExporter(endpoint=target, insecure=True, headers={"authorization": "Bearer in-secret"})
        assert good.export(spans) == SpanExportResult.SUCCESS
        assert metric(server, "mast_spans_received_total", protocol="grpc") == 1


def test_hostile_bodies_never_cause_a_server_error(config):
    import random

    rng = random.Random(7)
    valid = request_of(*(proto_span(os.urandom(16), os.urandom(8)) for _ in range(4))).SerializeToString()
    deep_json = b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    deep_value = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": "ab" * 16, "spanId": "cd" * 8, "name": "x", "startTimeUnixNano": str(NOW), "endTimeUnixNano": str(NOW),
        "attributes": [{"key": "k", "value": {"arrayValue": {"values": [{"arrayValue": {"values": []}}]}}}]}]}]}]})
    deep_value = deep_value.replace('{"arrayValue": {"values": []}}', '{"arrayValue": {"values": [' * 500 + "]}}" * 500 + "]}}")
    with running(config) as server:
        for _ in range(60):
            body = bytearray(valid)
            for _ in range(rng.randint(1, 8)):
                body[rng.randrange(len(body))] = rng.randrange(256)
            assert post(server, bytes(body)).status_code in (200, 400)
        for body in (deep_json, deep_value.encode(), b"\x00" * 1000, b'{"resourceSpans": "nope"}', b"null"):
            r = post(server, body, {"Content-Type": "application/json"})
            assert r.status_code in (200, 400), (body[:40], r.status_code)
        assert httpx.get(f"{server.http_url}/healthz").status_code == 200
