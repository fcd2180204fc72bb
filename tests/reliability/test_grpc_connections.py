"""OTLP/gRPC connections against a real ``mast-otel serve`` subprocess: one address holding every
connection the receiver takes must not shut others out, and idle connections are closed sooner
once the total cap is near.

The hostile connections are raw sockets bound to other loopback addresses (127.0.0.2, 127.0.2.x)
that send the HTTP/2 preface and settings, then nothing, as idle exporters on other hosts would;
the well-behaved exporter is a real gRPC channel from 127.0.0.1."""

from __future__ import annotations

import select
import socket
import time

import pytest
from gateway import exporter_calls
from hostile_clients import PREFACE, SETTINGS, frame
from soak import ServeProcess, scrape, total, wait_for

CAP, PER_ADDRESS = 40, 4


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    overrides = {"receiver": {"max_grpc_connections": CAP, "max_grpc_connections_per_address": PER_ADDRESS,
                              "grpc_idle_seconds_near_cap": 2.0}}
    with ServeProcess(tmp_path_factory.mktemp("serve"), overrides) as process:
        yield process


def idle_connections(port: int, source: str, count: int) -> list[socket.socket]:
    opened = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", port))
        sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
        opened.append(sock)
    return opened


def closed_by_server(sockets: list[socket.socket], wanted: int, seconds: float) -> int:
    """How many of ``sockets`` the server closed, waiting up to ``seconds`` for ``wanted`` of them."""
    closed: set[socket.socket] = set()
    deadline = time.monotonic() + seconds
    while len(closed) < wanted and time.monotonic() < deadline:
        readable, _, _ = select.select([s for s in sockets if s not in closed], [], [], 0.5)
        for sock in readable:
            try:
                while sock.recv(65536):  # the server's settings and pings; then the end
                    if not select.select([sock], [], [], 0.2)[0]:
                        break
                else:
                    closed.add(sock)
            except OSError:
                closed.add(sock)
    return len(closed)


def refused(serve: ServeProcess, reason: str) -> float:
    return total(scrape(serve.url), "mast_ingest_refused_requests_total", protocol="grpc", reason=reason)


def test_one_address_holding_every_connection_shuts_no_one_out(serve):
    """The issue's attack: one host opens as many idle connections as the receiver takes in total."""
    hostile = idle_connections(serve.grpc_port, "127.0.0.2", CAP)
    try:
        assert closed_by_server(hostile, CAP - PER_ADDRESS, 10) == CAP - PER_ADDRESS  # all but its share
        exporter = exporter_calls(serve.grpc_port, 3, timeout=5)
        assert exporter["statuses"] == {"OK": 3}, exporter
        assert refused(serve, "connections_per_address") >= CAP - PER_ADDRESS
    finally:
        for sock in hostile:
            sock.close()


def test_idle_connections_are_closed_sooner_near_the_cap(serve):
    """Eight addresses within their share, 32 idle connections: past three quarters of the cap,
    each is closed once it has had no call for grpc_idle_seconds_near_cap (2 s, not 300 s)."""
    crowd = [sock for i in range(8) for sock in idle_connections(serve.grpc_port, f"127.0.2.{i + 1}", PER_ADDRESS)]
    try:
        started = time.monotonic()
        assert closed_by_server(crowd, len(crowd) - 2, 15) >= len(crowd) - 2
        assert time.monotonic() - started < 15
        assert wait_for(lambda: refused(serve, "idle_near_cap") >= len(crowd) - 2, 5)
        exporter = exporter_calls(serve.grpc_port, 3, timeout=5)
        assert exporter["statuses"] == {"OK": 3}, exporter
    finally:
        for sock in crowd:
            sock.close()
