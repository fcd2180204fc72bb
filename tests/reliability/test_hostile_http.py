"""Hostile input over HTTP: the real receiver answers 200 (with partial success), 400, 413 or
415, never a 5xx, stays healthy, and every span it acknowledged is accounted for."""

from __future__ import annotations

import gzip
import json
import zlib

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from soak import RunFactory, Tally, reconcile

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.server import ProcessorServer
from tests.reliability.test_hostile_input import as_otlp_json, requests, with_bad_utf8

LIMIT = 256 * 1024
ANSWERS = {200, 400, 413, 415}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile-http")
    config = ProcessorConfig(
        receiver={"host": "127.0.0.1", "http_port": 0, "grpc_enabled": False, "max_body_bytes": LIMIT},
        assembly={"grace_seconds": 0.1, "idle_timeout_seconds": 1.0, "sweep_interval_seconds": 0.1},
        store={"path": str(path / "store.sqlite")},
    )
    with ProcessorServer(config) as running:
        running.tally = Tally()
        yield running


def post(server, body: bytes, content_type: str, encoding: str | None = None) -> httpx.Response:
    headers = {"Content-Type": content_type, **({"Content-Encoding": encoding} if encoding else {})}
    return httpx.post(f"{server.http_url}/v1/traces", content=body, headers=headers, timeout=30)


def count_ack(server, response: httpx.Response, spans: int, as_json: bool) -> None:
    assert response.status_code in ANSWERS, response.text
    if response.status_code != 200:
        return
    if as_json:
        rejected = int(response.json().get("partialSuccess", {}).get("rejectedSpans", 0))
    else:
        rejected = ExportTraceServiceResponse.FromString(response.content).partial_success.rejected_spans
    server.tally.spans_acked += spans - rejected


COMPRESS = {None: lambda b: b, "gzip": gzip.compress, "deflate": zlib.compress, "br": lambda b: b}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
@given(requests(), st.booleans(), st.sampled_from(list(COMPRESS)))
def test_fuzzed_requests_over_http(server, generated, as_json, encoding):
    request, count = generated
    body = json.dumps(as_otlp_json(request)).encode() if as_json else request.SerializeToString()
    response = post(server, COMPRESS[encoding](with_bad_utf8(body)), "application/json" if as_json else "application/x-protobuf", encoding)
    count_ack(server, response, count, as_json)
    assert response.status_code != 400 or encoding == "br" or b"NaN" in body or b"Infinity" in body, response.text


def test_bombs_and_lies_are_refused_cleanly(server):
    bomb = gzip.compress(b"\0" * (64 * LIMIT))
    assert post(server, bomb, "application/x-protobuf", "gzip").status_code == 413
    assert post(server, b"\0" * (LIMIT + 1), "application/x-protobuf").status_code == 413
    assert post(server, b"{}", "text/plain").status_code == 415
    assert post(server, b"\x1f\x8b not gzip", "application/x-protobuf", "gzip").status_code == 400
    whole = RunFactory(1).run()[0]
    assert post(server, gzip.compress(whole)[:-12], "application/x-protobuf", "gzip").status_code == 400
    assert post(server, whole[: len(whole) - 7], "application/x-protobuf").status_code == 400
    assert post(server, b"[" * 100_000 + b"]" * 100_000, "application/json").status_code == 400
    import socket

    with socket.create_connection(("127.0.0.1", server.http_port), timeout=30) as sock:  # a Content-Length that lies
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                     b"Content-Length: %d\r\n\r\n\x0a\x00" % (10 * LIMIT))
        assert sock.recv(64).startswith(b"HTTP/1.1 413")


def test_still_healthy_and_every_acknowledged_span_accounted(server):
    import time

    assert httpx.get(f"{server.http_url}/healthz").status_code == 200
    deadline = time.monotonic() + 30
    while server.ingest.in_flight and time.monotonic() < deadline:
        time.sleep(0.1)
    counts = reconcile(server.http_url, server.tally)
    assert counts["spans_unaccounted"] == 0, counts
