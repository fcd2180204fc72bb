"""Stalled OTLP/gRPC senders against a real ``mast-otel serve`` subprocess: a client that sends
the Export headers and a few bytes of a declared 1 MB message, then stops, must neither block
other senders nor hold a thread or budget past the receipt deadline; idle connections are capped.

The stalled client speaks HTTP/2 by hand (raw frames on a socket) from 127.0.0.2, another
loopback address than the well-behaved exporter's, as an attacker on another host would."""

from __future__ import annotations

import os
import select
import socket
import struct
import threading
import time

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from soak import ServeProcess, scrape, total, wait_for

EXPORT_PATH = b"/opentelemetry.proto.collector.trace.v1.TraceService/Export"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, PING = 0, 1, 4, 6
ACK, END_HEADERS = 0x1, 0x4


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(name: bytes, value: bytes) -> bytes:
    """An HPACK header field, literal without indexing, new name (both shorter than 127 bytes)."""
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


class StalledSender:
    """One HTTP/2 connection from ``source`` with ``streams`` Export calls that each declare a
    1 MB message, send 10 bytes of it and stop; it answers the server's SETTINGS and PINGs so
    the connection itself stays healthy."""

    def __init__(self, port: int, streams: int, source: str = "127.0.0.2") -> None:
        self.sock = socket.socket()
        self.sock.bind((source, 0))
        self.sock.connect(("127.0.0.1", port))
        out = [PREFACE, frame(SETTINGS, 0, 0)]
        block = b"".join(literal(n, v) for n, v in (
            (b":method", b"POST"), (b":scheme", b"http"), (b":path", EXPORT_PATH), (b":authority", b"127.0.0.1"),
            (b"content-type", b"application/grpc"), (b"te", b"trailers")))
        for i in range(streams):
            stream = 2 * i + 1
            out += [frame(HEADERS, END_HEADERS, stream, block),
                    frame(DATA, 0, stream, b"\x00" + struct.pack(">I", 1_000_000) + b"x" * 10)]
        self.sock.sendall(b"".join(out))
        self.closed = threading.Event()
        threading.Thread(target=self._answer, daemon=True).start()

    def _answer(self) -> None:
        buffer = b""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                buffer += chunk
                while len(buffer) >= 9:
                    length = int.from_bytes(buffer[:3], "big")
                    if len(buffer) < 9 + length:
                        break
                    kind, flags, payload = buffer[3], buffer[4], buffer[9:9 + length]
                    buffer = buffer[9 + length:]
                    if kind == SETTINGS and not flags & ACK:
                        self.sock.sendall(frame(SETTINGS, ACK, 0))
                    elif kind == PING and not flags & ACK:
                        self.sock.sendall(frame(PING, ACK, 0, payload))
        except OSError:
            pass
        self.closed.set()

    def close(self) -> None:
        self.sock.close()


def tiny_request() -> bytes:
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.add(
        trace_id=os.urandom(16), span_id=os.urandom(8), name="GET /", start_time_unix_nano=1, end_time_unix_nano=2)
    return request.SerializeToString()


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    overrides = {"receiver": {"body_timeout_seconds": 3.0, "max_grpc_connections": 8}}
    with ServeProcess(tmp_path_factory.mktemp("serve"), overrides) as process:
        yield process


def test_stalled_streams_neither_block_exports_nor_hold_budget(serve):
    stalled = [StalledSender(serve.grpc_port, 2) for _ in range(2)]  # four stalled streams, as many as grpc_workers
    try:
        with grpc.insecure_channel(f"127.0.0.1:{serve.grpc_port}") as channel:
            export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
            for _ in range(3):  # a deadline on the call, not a timed assertion: a blocked server fails it
                export(tiny_request(), timeout=10)
        # The receipt deadline cancels the stalled calls, while their connections stay open.
        assert wait_for(lambda: total(scrape(serve.url), "mast_ingest_refused_requests_total",
                                      protocol="grpc", reason="body_timeout") >= 4, 20)
        assert total(scrape(serve.url), "mast_request_bytes_in_flight") == 0
    finally:
        for sender in stalled:
            sender.close()


def test_one_address_cannot_take_every_receiving_thread(serve):
    stalled = StalledSender(serve.grpc_port, 8)  # twice grpc_workers from one address: the extra ones are refused
    try:
        with grpc.insecure_channel(f"127.0.0.1:{serve.grpc_port}") as channel:
            stub = TraceServiceStub(channel)
            stub.Export(ExportTraceServiceRequest.FromString(tiny_request()), timeout=10)
        assert wait_for(lambda: total(scrape(serve.url), "mast_ingest_refused_requests_total",
                                      protocol="grpc", reason="peer_limit") >= 4, 10)
    finally:
        stalled.close()


def test_grpc_connections_are_capped(serve):
    idle = []
    try:
        for _ in range(16):  # twice max_grpc_connections, all idle after the HTTP/2 preface
            sock = socket.create_connection(("127.0.0.1", serve.grpc_port))
            sock.sendall(PREFACE + frame(SETTINGS, 0, 0))
            idle.append(sock)
        refused, deadline = set(), time.monotonic() + 10
        while len(refused) < 8 and time.monotonic() < deadline:
            readable, _, _ = select.select([s for s in idle if s not in refused], [], [], 0.5)
            for sock in readable:
                try:
                    while sock.recv(65536):
                        if not select.select([sock], [], [], 0.2)[0]:
                            break
                    else:
                        refused.add(sock)
                except OSError:
                    refused.add(sock)
        assert len(refused) >= 8  # closed by the server: beyond the cap
    finally:
        for sock in idle:
            sock.close()
