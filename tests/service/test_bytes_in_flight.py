"""Both receivers refuse, with a retry hint, what the bytes-in-flight budget cannot hold, and
take it once the bytes are released."""

from __future__ import annotations

import os

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from mast_otel.processors.service.memory.admission import BytesInFlight, Reservation
from mast_otel.processors.service.memory.account import MemoryAccount

from tests.service.support import make_config, metric, running
from tests.service.test_receivers import PB, proto_span, request_of


@pytest.fixture
def tight(tmp_path):
    return make_config(tmp_path, receiver={"max_bytes_in_flight": 2000, "admission_wait_seconds": 0.2})


def _body(spans: int) -> bytes:
    tid = os.urandom(16)
    return request_of(*(proto_span(tid, os.urandom(8)) for _ in range(spans))).SerializeToString()


def test_http_refuses_declared_and_streamed_bodies_that_do_not_fit(tight):
    body = _body(40)
    assert 1000 < len(body) < 16000
    with running(tight) as server:
        pool = server.ingest.request_bytes
        other_request = Reservation(pool)
        assert other_request.grow_to(1500)  # another request is being read (the oldest: it may grow, these may not)
        url = f"{server.http_url}/v1/traces"
        declared = httpx.post(url, content=body, headers=PB)
        streamed = httpx.post(url, content=iter([body[:400], body[400:]]), headers=PB)  # chunked: no Content-Length
        for r in (declared, streamed):
            assert r.status_code == 429 and r.headers["retry-after"] == "1", r.content
        assert metric(server, "mast_ingest_refused_requests_total", protocol="http", reason="bytes_in_flight") == 2
        assert metric(server, "mast_request_bytes_in_flight") == 1500
        other_request.release()
        assert httpx.post(url, content=body, headers=PB).status_code == 200
        other = _body(40)  # new span ids: not duplicates of the first
        assert httpx.post(url, content=iter([other[:400], other[400:]]), headers=PB).status_code == 200
        assert metric(server, "mast_request_bytes_in_flight") == 0
        assert metric(server, "mast_spans_received_total") == 80


def test_grpc_refuses_while_the_budget_is_taken(tight):
    with running(tight) as server:
        pool = server.ingest.request_bytes
        assert pool.try_acquire(10)
        stub = TraceServiceStub(grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}"))
        with pytest.raises(grpc.RpcError) as info:
            stub.Export(request_of(proto_span(os.urandom(16), os.urandom(8))))
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert any(k == "google.rpc.retryinfo-bin" for k, _ in info.value.trailing_metadata())
        pool.release(10)
        stub.Export(request_of(proto_span(os.urandom(16), os.urandom(8))))
        assert metric(server, "mast_ingest_refused_requests_total", protocol="grpc", reason="bytes_in_flight") == 1
        assert metric(server, "mast_spans_received_total", protocol="grpc") == 1


def test_a_lone_request_waits_while_the_rest_of_the_memory_account_fills_the_budget():
    """A request admitted before a body it waited behind was buffered may not then start alone:
    'one request always fits' is about the bytes-in-flight limit, not the memory budget."""
    memory = MemoryAccount(1000)
    buffered = memory.charge("assembly")
    pool = BytesInFlight(500, peer_limit=250, room=memory.room, budget=memory.budget)
    memory.register("request_bodies", lambda: pool.held)
    buffered.add(700)
    assert not Reservation(pool).grow_to(400, timeout=0.05)  # alone, but the spans before it leave no room for it
    lone = Reservation(pool)
    assert lone.grow_to(300)  # alone, within the room
    assert not lone.grow_to(400, timeout=0.05)  # the oldest, but past the room
    lone.release()
    buffered.add(-700)
    assert lone.grow_to(2000)  # nothing else held: alone, past the limits and the budget
    lone.release()
    assert pool.held == 0
