"""Stalled OTLP/gRPC senders against a real ``mast-otel serve`` subprocess: a client that sends
the Export headers and a few bytes of a declared 1 MB message, then stops, must neither block
other senders nor hold a thread or budget past the receipt deadline; idle connections are capped.

The stalled client speaks HTTP/2 by hand (raw frames on a socket) from 127.0.0.2, another
loopback address than the well-behaved exporter's, as an attacker on another host would."""

from __future__ import annotations

import os
import select
import socket
import time

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub
from hostile_clients import PREFACE, SETTINGS, StalledSender, frame
from soak import ServeProcess, scrape, total, wait_for

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
