"""Decoding a body costs several times its size for a moment; that cost is reserved in the memory
account while the body is decoded, so a body admitted beside a nearly full account is refused
with a retry hint before anything of it is acknowledged, instead of decoding uncharged."""

from __future__ import annotations

import os

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from mast_otel.processors.service.memory.account import MemoryAccount
from mast_otel.processors.service.memory.admission import (
    DECODE_COST_JSON, DECODE_COST_PROTOBUF, DECODE_COST_REEXPORTED, BytesInFlight, Reservation, decode_cost,
)

from tests.service.support import make_config, metric, running
from tests.service.test_receivers import PB, proto_span, request_of

BUDGET = 1 << 20


def _request(spans: int = 200):
    tid = os.urandom(16)
    return request_of(*(proto_span(tid, os.urandom(8)) for _ in range(spans)))


def test_the_estimate_grows_with_the_body_and_is_larger_for_json_and_re_export():
    assert decode_cost(1000, as_json=False, keep_raw=False) == DECODE_COST_PROTOBUF * 1000
    assert DECODE_COST_PROTOBUF < DECODE_COST_REEXPORTED < DECODE_COST_JSON
    assert decode_cost(1000, as_json=True, keep_raw=False) == DECODE_COST_JSON * 1000


def test_a_decode_reserves_its_cost_within_the_room_or_alone():
    memory = MemoryAccount(1000)
    buffered = memory.charge("assembly")
    pool = BytesInFlight(500, peer_limit=250, room=memory.room, budget=memory.budget)
    memory.register("request_bodies", lambda: pool.held)
    memory.register("decoding", lambda: pool.decoding)
    buffered.add(300)
    first, second = Reservation(pool), Reservation(pool)
    assert first.grow_to(100) and second.grow_to(100)
    assert first.decode(400)  # room: 1000 - 300 - 200
    assert memory.held() == 900 and pool.held == 200  # the account's, not the bytes-in-flight limit's
    assert not second.decode(400, timeout=0.05)  # what is left: 100
    first.decoded()
    assert second.decode(400)
    second.release()
    first.release()
    assert memory.held() == 300 and pool.decoding == 0
    buffered.add(-300)
    lone = Reservation(pool)
    assert lone.grow_to(300) and lone.decode(4 * 300)  # the account holds nothing else: past the budget, alone
    assert not Reservation(pool).decode(10, timeout=0.05)  # but nothing beside it
    lone.release()
    assert memory.held() == 0


def test_a_decode_makes_room_by_forgetting_what_gives_way_first():
    """Runs retained for late spans may hold the account up to 90% of its budget and give way
    only when asked: a decode asks before it waits (without it, a flood of new sessions at an
    8 MB budget had 16-26 of 65-73 requests accepted in 25 s instead of 234 of 253)."""
    memory = MemoryAccount(1000)
    retained = memory.charge("retained")
    asked: list[int] = []

    def forget_retained(nbytes: int) -> None:
        asked.append(nbytes)
        retained.add(-min(retained.held, nbytes - memory.room()))

    pool = BytesInFlight(500, room=memory.room, budget=memory.budget, make_room=forget_retained)
    memory.register("request_bodies", lambda: pool.held)
    memory.register("decoding", lambda: pool.decoding)
    retained.add(900)
    body = Reservation(pool)
    assert body.grow_to(50)  # room: 50
    assert body.decode(200)
    assert asked == [200] and retained.held == 750 and memory.held() == 1000
    assert not Reservation(pool).decode(1000, timeout=0.05)  # nothing left to give way
    body.release()


def test_a_body_whose_decode_does_not_fit_the_room_is_refused_before_it_is_acknowledged(tmp_path):
    """The account holds all but three times the body: room for the body's bytes (a gRPC call
    reserves ``max_body_bytes`` while its message arrives, here twice the body), not for decoding
    it. Without the decode's reservation this body was accepted and decoded uncharged."""
    request = _request()
    body = request.SerializeToString()
    assert 10_000 < len(body) < BUDGET // 8
    config = make_config(tmp_path, assembly={"max_buffered_bytes": BUDGET},
                         receiver={"admission_wait_seconds": 0.2, "max_body_bytes": 2 * len(body)})
    with running(config) as server:
        others = server.ingest.memory.charge("others")  # runs that never end, say
        others.add(BUDGET - 3 * len(body))
        url = f"{server.http_url}/v1/traces"
        r = httpx.post(url, content=body, headers=PB)
        assert r.status_code == 429 and r.headers["retry-after"] == "1" and b"decode" in r.content, r.content
        stub = TraceServiceStub(grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}"))
        with pytest.raises(grpc.RpcError) as info:
            stub.Export(request)
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "decode" in info.value.details()
        assert any(k == "google.rpc.retryinfo-bin" for k, _ in info.value.trailing_metadata())
        assert metric(server, "mast_spans_received_total") == 0  # nothing of it was taken
        assert metric(server, "mast_ingest_refused_requests_total", reason="bytes_in_flight") == 2
        pool = server.ingest.request_bytes
        assert pool.decoding == 0 and pool.held == 0
        others.add(-(BUDGET - 3 * len(body)))  # room again: the same body goes through
        assert httpx.post(url, content=body, headers=PB).status_code == 200
        stub.Export(_request())
        assert metric(server, "mast_spans_received_total") == 400
        assert pool.decoding == 0 and pool.held == 0
