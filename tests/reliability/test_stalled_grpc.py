"""Stalled OTLP/gRPC senders against a real ``mast-otel serve`` subprocess: a client that sends
the Export headers and a few bytes of a declared 1 MB message, then stops, must neither block
other senders nor hold a thread or budget past the receipt deadline; idle connections are capped.
A gateway (one address, many concurrent exports) is served, even while stalled streams from
many addresses hold every receiving thread.

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
from gateway import StallingCrowd, exporter_calls, gateway_rounds
from hostile_clients import PREFACE, SETTINGS, StalledSender, frame
from large_bodies import MB, large_bodies
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

        def ended() -> float:  # past the address's share (after a wait for its slot), or cancelled for the exporter
            metrics = scrape(serve.url)
            return sum(total(metrics, "mast_ingest_refused_requests_total", protocol="grpc", reason=reason)
                       for reason in ("peer_limit", "stalled"))
        assert wait_for(lambda: ended() >= 4, 10)
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


@pytest.fixture(scope="module")
def gateway_serve(tmp_path_factory):
    """The default receiver settings (512 MiB budget, 30 s receipt deadline): what a gateway meets."""
    with ServeProcess(tmp_path_factory.mktemp("gateway")) as process:
        yield process


@pytest.fixture(scope="module")
def megabyte_bodies():
    return large_bodies(70, MB)  # about 1 MB of agent runs each, distinct traces


def test_a_gateways_concurrent_exports_are_accepted_while_the_budget_has_room(gateway_serve, megabyte_bodies):
    """One address (a Collector gateway) with 10 exports of about 1 MB at once, five times over."""
    answered = gateway_rounds(gateway_serve.grpc_port, megabyte_bodies[:50], concurrency=10, timeout=15)
    assert answered["statuses"] == {"OK": 50}, answered
    assert total(scrape(gateway_serve.url), "mast_ingest_refused_requests_total", protocol="grpc") == 0


def test_stalled_streams_from_many_addresses_block_neither_an_exporter_nor_a_gateway(gateway_serve, megabyte_bodies):
    """19 addresses each keep one stalled stream open (a new one as soon as the server ends the
    last): more than the receiving threads, each address within its share."""
    crowd = StallingCrowd(gateway_serve.grpc_port, 19)
    try:
        time.sleep(0.5)  # the crowd's streams hold the threads
        exporter = exporter_calls(gateway_serve.grpc_port, 6, timeout=10)  # the OTLP exporter's default deadline
        gateway = gateway_rounds(gateway_serve.grpc_port, megabyte_bodies[50:70], concurrency=10, timeout=15)
        assert crowd.streams_opened() > 19  # the crowd kept stalling throughout
    finally:
        crowd.close()
    assert exporter["statuses"] == {"OK": 6}, exporter
    assert gateway["statuses"] == {"OK": 20}, gateway
    assert total(scrape(gateway_serve.url), "mast_ingest_refused_requests_total", protocol="grpc", reason="stalled") > 0
    # the crowd's connections are gone: their calls end and free their bytes
    assert wait_for(lambda: total(scrape(gateway_serve.url), "mast_request_bytes_in_flight") == 0, 10)
