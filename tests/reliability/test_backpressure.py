"""Backpressure and limits as a sender sees them, against a real ``mast-otel serve`` subprocess:
honest partial success, memory held to budget under concurrent large bodies, slow clients
closed, edge values answered 4xx, disconnects counted without a traceback."""

from __future__ import annotations

import json
import os
import select
import socket
import time

import grpc
import httpx
import pytest
from large_bodies import EXPORT, run as large_bodies_run
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from soak import ServeProcess, scrape, total

NOW = 1_760_000_000_000_000_000
SPANS = 20_000  # of one trace: 15,000 over the default assembly.max_spans_per_trace


def _dropped(url: str) -> float:
    """What the server counts as not kept: rejected spans (any reason) and late spans dropped."""
    m = scrape(url)
    return total(m, "mast_spans_rejected_total") + total(m, "mast_late_spans_total", reason="dropped")


def one_big_trace() -> tuple[bytes, dict]:
    """20,000 tool-call spans under one agent span, plus two spans with bad ids (decoder rejects):
    the same request as OTLP protobuf and as OTLP JSON."""
    trace_id, root_id = os.urandom(16), os.urandom(8)
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    root = spans.add(trace_id=trace_id, span_id=root_id, name="invoke_agent big", start_time_unix_nano=NOW,
                     end_time_unix_nano=NOW + 10**9)
    root.attributes.append(KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="invoke_agent")))
    for i in range(SPANS - 1):
        span = spans.add(trace_id=trace_id, span_id=os.urandom(8), parent_span_id=root_id, name="execute_tool t",
                         start_time_unix_nano=NOW + i, end_time_unix_nano=NOW + i + 1)
        span.attributes.append(KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="execute_tool")))
    for _ in range(2):
        spans.add(trace_id=trace_id, span_id=b"\x01", name="bad", start_time_unix_nano=NOW, end_time_unix_nano=NOW)
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": s.trace_id.hex(), "spanId": s.span_id.hex(), "parentSpanId": s.parent_span_id.hex(), "name": s.name,
         "startTimeUnixNano": str(s.start_time_unix_nano), "endTimeUnixNano": str(s.end_time_unix_nano),
         "attributes": [{"key": a.key, "value": {"stringValue": a.value.string_value}} for a in s.attributes]}
        for s in spans]}]}]}
    return request.SerializeToString(), doc


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    overrides = {"receiver": {"header_timeout_seconds": 1.0, "body_timeout_seconds": 2.0}}
    with ServeProcess(tmp_path_factory.mktemp("serve"), overrides) as process:
        yield process


@pytest.mark.parametrize("wire", ["http-protobuf", "http-json", "grpc"])
def test_partial_success_equals_the_servers_drop_count(serve, wire):
    body, doc = one_big_trace()
    before = _dropped(serve.url)
    if wire == "grpc":
        with grpc.insecure_channel(f"127.0.0.1:{serve.grpc_port}") as channel:
            answer = ExportTraceServiceResponse.FromString(channel.unary_unary(EXPORT)(body, timeout=60))
        rejected, message = answer.partial_success.rejected_spans, answer.partial_success.error_message
    elif wire == "http-json":
        r = httpx.post(f"{serve.url}/v1/traces", content=json.dumps(doc), headers={"Content-Type": "application/json"}, timeout=60)
        assert r.status_code == 200, r.text
        rejected, message = int(r.json()["partialSuccess"]["rejectedSpans"]), r.json()["partialSuccess"]["errorMessage"]
    else:
        r = httpx.post(f"{serve.url}/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"}, timeout=60)
        assert r.status_code == 200, r.text
        answer = ExportTraceServiceResponse.FromString(r.content)
        rejected, message = answer.partial_success.rejected_spans, answer.partial_success.error_message
    assert rejected == _dropped(serve.url) - before
    assert rejected >= SPANS - 5000 + 2  # the per-trace cap and the two bad ids
    assert "trace_span_limit=" in message and "max_spans_per_trace" in message and "invalid_span_id=2" in message


@pytest.mark.parametrize("protocol, clients", [("http", 24), ("grpc", 40)])
def test_concurrent_large_bodies_keep_rss_within_the_envelope(tmp_path, protocol, clients):
    """With the bytes-in-flight limit off in effect (``--max-bytes-in-flight 100000000000``) the
    memory account alone held the same load (docs/processor.md)."""
    report = large_bodies_run(tmp_path, protocol=protocol, clients=clients, body_mb=12, budget_mb=16)
    assert report["alive"], report
    assert report["peak_rss_mb"] <= report["rss_limit_mb"], report
    refused = report["statuses"].get("429" if protocol == "http" else "RESOURCE_EXHAUSTED", 0)
    accepted = report["statuses"].get("200" if protocol == "http" else "OK", 0)
    assert accepted >= 1 and accepted + refused == clients, report  # refused with a status, not cut off


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1024) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except BlockingIOError:
        return False


def test_slow_connections_are_closed(serve):
    heads = []
    for _ in range(400):
        sock = socket.create_connection(("127.0.0.1", serve.http_port))
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
        sock.setblocking(False)
        heads.append(sock)
    body = socket.create_connection(("127.0.0.1", serve.http_port), timeout=10)
    body.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\n")
    started = time.monotonic()
    try:
        open_heads = heads
        while open_heads and time.monotonic() - started < 5:
            for sock in open_heads:  # a byte now and then does not buy more time
                try:
                    sock.send(b"X")
                except OSError:
                    pass
            select.select(open_heads, [], [], 0.3)
            open_heads = [s for s in open_heads if not _closed(s)]
        assert not open_heads, f"{len(open_heads)} of 400 connections still open after 5 s"
        for _ in range(10):  # the body trickles in
            try:
                body.sendall(b"\x00")
            except OSError:
                break
            time.sleep(0.3)
        answer = body.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert httpx.get(f"{serve.url}/healthz", timeout=5).status_code == 200
    finally:
        for sock in [*heads, body]:
            sock.close()


def test_a_request_head_without_end_gets_431_and_its_connection_closed(serve):
    head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-Padding-%d: %s\r\n" % (i, b"p" * 1024) for i in range(66))
    sock = socket.create_connection(("127.0.0.1", serve.http_port), timeout=10)
    try:
        sock.sendall(head)  # just past the 64 KiB cap, with no blank line to end it
        answer = b""
        try:
            while chunk := sock.recv(4096):  # a connection left open would time out here
                answer += chunk
        except ConnectionResetError:  # closed with some of the head still unread: reset, not answered
            answer = answer or b"reset"
        assert answer.startswith(b"HTTP/1.1 431") or answer == b"reset", answer[:200]
    finally:
        sock.close()
    assert httpx.get(f"{serve.url}/healthz", timeout=5).status_code == 200


@pytest.mark.parametrize("method, path, payload", [
    ("GET", "/v1/diagnoses?offset=9223372036854775808", None),
    ("GET", "/v1/diagnoses?offset=-1", None),
    ("GET", "/v1/diagnoses?limit=0", None),
    ("GET", "/v1/diagnoses?until=9999-12-31T23:59:59Z", None),
    ("GET", "/v1/diagnoses?since=0001-01-01", None),
    ("GET", "/v1/diagnoses?since=-99999999999999", None),
    ("POST", "/v1/outcomes", '{"trace_id": "' + "ab" * 16 + '", "outcome": "failure", "score": 1e309}'),
    ("POST", "/v1/outcomes", '{"trace_id": "' + "ab" * 16 + '", "outcome": "failure", "score": NaN}'),
    ("POST", "/v1/outcomes", '{"trace_id": "' + "ab" * 16 + '", "outcome": "failure", "score": -Infinity}'),
    ("POST", "/v1/outcomes", "x" * (2 * 1024 * 1024)),
])
def test_edge_values_answer_4xx_without_a_traceback(serve, method, path, payload):
    r = httpx.request(method, f"{serve.url}{path}", content=payload, headers={"Content-Type": "application/json"}, timeout=30)
    assert 400 <= r.status_code < 500, (r.status_code, r.text[:300])
    assert "Traceback" not in serve.log()


def test_a_client_that_disconnects_mid_body_is_counted_not_logged_as_an_error(serve):
    before = total(scrape(serve.url), "mast_client_disconnects_total")
    for path in ("/v1/traces", "/v1/outcomes"):
        with socket.create_connection(("127.0.0.1", serve.http_port)) as sock:
            sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n".encode()
                         + b"{" * 5000)
            time.sleep(0.2)

    def counted() -> float:
        return total(scrape(serve.url), "mast_client_disconnects_total") - before

    deadline = time.monotonic() + 5
    while counted() < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert counted() == 2
    assert "Traceback" not in serve.log() and "ClientDisconnect" not in serve.log()


@pytest.mark.parametrize("query", ["until=9999-12-31T23:59:59Z", "since=0001-01-01"])
def test_severity_time_bounds_answer_422(serve, query):
    r = httpx.get(f"{serve.url}/v1/severity?{query}", timeout=30)
    assert r.status_code == 422, r.text[:300]
    assert "Traceback" not in serve.log()


def test_past_max_http_connections_requests_get_503_with_retry_after(tmp_path):
    """Idle connections fill the limit; the next request is told when to come back, and once
    they close, requests are served again."""
    with ServeProcess(tmp_path, {"receiver": {"max_http_connections": 4}}) as process:
        idle = [socket.create_connection(("127.0.0.1", process.http_port)) for _ in range(4)]
        try:
            time.sleep(0.2)  # the server has accepted them
            answer = httpx.post(f"{process.url}/v1/traces", content=b"", timeout=10,
                                headers={"Content-Type": "application/x-protobuf"})
            assert answer.status_code == 503, answer.text
            assert answer.headers["retry-after"] == "1"
            assert answer.headers["connection"] == "close"
        finally:
            for sock in idle:
                sock.close()
        deadline = time.monotonic() + 5
        while True:
            answer = httpx.post(f"{process.url}/v1/traces", content=b"", timeout=10,
                                headers={"Content-Type": "application/x-protobuf"})
            if answer.status_code != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert answer.status_code == 200, answer.text
        assert "Traceback" not in process.log_path.read_text()
