"""The memory account against a real ``mast-otel serve`` subprocess: long identifiers, retained
runs, the re-export queue, spans outside any agent step, bodies declared but not sent, and the
HTTP head cap, each at sizes scaled down from where they first broke (a lowered budget keeps
the same property visible in seconds)."""

from __future__ import annotations

import os
import socket

import httpx
from hostile_clients import NOW, SilentBackend, tool_spans, whole_run
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from soak import ServeProcess, drained, scrape, total, wait_for

PB = {"Content-Type": "application/x-protobuf"}
MB = 1024 * 1024


def held(url: str) -> float:
    return total(scrape(url), "mast_buffered_bytes")


def test_long_ids_are_charged_and_refused_before_the_budget_is_passed(tmp_path):
    budget = 8 * MB
    # runs stay buffered (no pressure eviction within the test) so what was accepted is what is held
    with ServeProcess(tmp_path, {"assembly": {"max_buffered_bytes": budget, "pressure_eviction_seconds": 600}}) as serve:
        statuses, accepted_id_bytes = [], 0
        for _ in range(40):  # 12 open tool calls per request, 2 x 20,000-character ids each: 480 KB of ids
            body = tool_spans(os.urandom(16), 12, 20_000).SerializeToString()
            r = httpx.post(f"{serve.url}/v1/traces", content=body, headers=PB, timeout=30)
            statuses.append(r.status_code)
            if r.status_code == 200:
                accepted_id_bytes += 12 * 2 * 20_000
            else:
                assert r.status_code == 429 and r.headers["retry-after"], r.content
        assert 429 in statuses  # refused before the envelope is passed ...
        shown = held(serve.url)
        assert shown >= accepted_id_bytes  # ... and the metric shows what the ids hold
        assert shown < budget + 600_000  # at most one request past the budget


def test_retained_runs_count_in_the_metric(tmp_path):
    with ServeProcess(tmp_path, {"assembly": {"max_buffered_bytes": 16 * MB}}) as serve:
        for _ in range(8):  # 8 whole runs with 11 x 2 x 20,000 characters of ids each
            assert httpx.post(f"{serve.url}/v1/traces", content=whole_run(20_000), headers=PB, timeout=30).status_code == 200
        assert wait_for(lambda: drained(serve.url, 8), 30)  # diagnosed, held for late spans
        assert held(serve.url) >= 8 * 11 * 2 * 20_000


def test_the_reexport_queue_is_bounded_and_charged_in_bytes(tmp_path):
    queue_bytes = 2 * MB
    with SilentBackend() as backend, ServeProcess(tmp_path, {
        "assembly": {"max_buffered_bytes": 32 * MB, "retention_seconds": 0},
        "exporters": {"otlp": [{"endpoint": backend.url, "timeout_seconds": 120, "queue_bytes": queue_bytes}]},
    }) as serve:
        for _ in range(24):  # ~440 KB per run, each re-exported whole: 10 MB for a backend that never answers
            assert httpx.post(f"{serve.url}/v1/traces", content=whole_run(20_000), headers=PB, timeout=30).status_code == 200
        assert wait_for(lambda: drained(serve.url, 24), 30)
        m = scrape(serve.url)
        assert total(m, "mast_export_dropped_spans_total", reason="queue_full") > 0  # bounded in bytes, counted
        shown = total(m, "mast_buffered_bytes")  # nothing buffered or retained: the queue alone
        assert queue_bytes / 2 <= shown <= queue_bytes + 500_000


def test_spans_outside_agent_steps_are_bounded_by_the_span_cap(tmp_path):
    with ServeProcess(tmp_path, {"assembly": {"max_buffered_bytes": 4 * MB, "max_spans_per_trace": 100}}) as serve:
        trace_id = os.urandom(16)
        opener = tool_spans(trace_id, 1, 32)  # an open run: its agent span never ends
        assert httpx.post(f"{serve.url}/v1/traces", content=opener.SerializeToString(), headers=PB).status_code == 200
        for batch in range(40):  # 40,000 plain spans (an HTTP client's, a database's) inside the open run
            request = ExportTraceServiceRequest()
            spans = request.resource_spans.add().scope_spans.add().spans
            for i in range(1000):
                spans.add(trace_id=trace_id, span_id=os.urandom(8), parent_span_id=os.urandom(8), name="GET /item",
                          start_time_unix_nano=NOW + i, end_time_unix_nano=NOW + i + 1)
            r = httpx.post(f"{serve.url}/v1/traces", content=request.SerializeToString(), headers=PB, timeout=30)
            assert r.status_code == 200, (batch, r.status_code)
        assert held(serve.url) < 200 * 1024  # what 2 x 100 remembered ids cost, not 40,000


def test_declared_body_sizes_reserve_nothing(tmp_path):
    with ServeProcess(tmp_path, {"receiver": {"body_timeout_seconds": 60}}) as serve:
        stalled = []
        for _ in range(16):  # each declares the largest body allowed, sends one byte, then idles
            sock = socket.create_connection(("127.0.0.1", serve.http_port))
            sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                         b"Content-Length: 16777216\r\n\r\n\x0a")
            stalled.append(sock)
        try:
            assert wait_for(lambda: total(scrape(serve.url), "mast_request_bytes_in_flight") >= 16, 10)
            r = httpx.post(f"{serve.url}/v1/traces", content=whole_run(32), headers=PB, timeout=30)
            assert r.status_code == 200, r.content
            assert total(scrape(serve.url), "mast_request_bytes_in_flight") < 1024  # a byte each, not 16 MiB
        finally:
            for sock in stalled:
                sock.close()


def test_a_request_head_over_the_cap_gets_431(tmp_path):
    with ServeProcess(tmp_path) as serve:
        head = (b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                + b"".join(b"X-Filler-%d: %s\r\n" % (i, b"a" * 1000) for i in range(100)) + b"\r\n")  # 100 KB in one write
        with socket.create_connection(("127.0.0.1", serve.http_port)) as sock:
            sock.sendall(head)
            sock.settimeout(10)
            answer = sock.recv(200)
        assert answer.startswith(b"HTTP/1.1 431"), answer
        assert httpx.get(f"{serve.url}/healthz").status_code == 200
