"""The per-address connection sweeper against a real grpcio server and real sockets."""

from __future__ import annotations

import socket
import threading
import time
from concurrent import futures

import grpc
import pytest

from mast_otel.processors.service.receivers.grpc_connections import Connection, ConnectionSweeper, peer_connection

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # and an empty SETTINGS frame


@pytest.mark.parametrize("peer, connection", [
    ("ipv4:10.0.0.9:41234", Connection("10.0.0.9", 41234)),
    ("ipv6:[::1]:5000", Connection("::1", 5000)),
    ("unix:/tmp/socket", None),
])
def test_peer_connection(peer, connection):
    assert peer_connection(peer) == connection


@pytest.fixture
def server():
    entered, release = threading.Event(), threading.Event()

    def hold(request: bytes, context: grpc.ServicerContext) -> bytes:
        sweeper.call_started(context.peer())
        entered.set()
        release.wait(10)
        sweeper.call_ended(context.peer())
        return b""

    sweeper = ConnectionSweeper(per_address=2, total=100, near_cap_idle_seconds=60, on_drop=lambda reason: None)
    grpc_server = grpc.server(futures.ThreadPoolExecutor(4))
    handler = grpc.unary_unary_rpc_method_handler(hold)
    grpc_server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Hold", {"Call": handler}),))
    port = grpc_server.add_insecure_port("127.0.0.1:0")
    grpc_server.start()
    sweeper.port = port
    yield sweeper, port, entered, release
    release.set()
    grpc_server.stop(0)


def _idle(port: int, count: int) -> list[socket.socket]:
    opened = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(PREFACE)
        opened.append(sock)
    return opened


def test_an_address_past_its_cap_loses_its_newest_idle_connections_not_a_busy_one(server):
    sweeper, port, entered, release = server
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary("/test.Hold/Call", request_serializer=None, response_deserializer=None).future(b"")
        assert entered.wait(5)
        idle = _idle(port, 4)
        try:
            time.sleep(0.3)
            assert len(sweeper._open()) == 5
            assert sweeper.sweep() == {"connections_per_address": 3, "idle_near_cap": 0}
            time.sleep(0.3)
            assert len(sweeper._open()) == 2
            release.set()
            call.result(timeout=5)  # the busy connection was kept: its call completes
        finally:
            for sock in idle:
                sock.close()


def test_near_the_total_cap_idle_connections_go(server):
    sweeper, port, _, _ = server
    sweeper.per_address, sweeper.total, sweeper.near_cap_idle_seconds = 100, 4, 0.2
    idle = _idle(port, 3)  # three quarters of 4
    try:
        time.sleep(0.3)
        assert sweeper.sweep() == {"connections_per_address": 0, "idle_near_cap": 0}  # first seen now
        time.sleep(0.3)
        assert sweeper.sweep() == {"connections_per_address": 0, "idle_near_cap": 3}
    finally:
        for sock in idle:
            sock.close()
