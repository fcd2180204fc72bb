"""Refused export input is told in the log: reason and client address, rate-limited, no content.

A real processor answers real requests over OTLP/HTTP and OTLP/gRPC; the WARNING lines it logs
are read with caplog. One line per (reason, client address) per ``receiver.refusal_log_seconds``,
the next one counting those left out; never the token or the body.
"""

from __future__ import annotations

import logging
import os

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

from mast_otel.processors.service.telemetry.refusal_log import RefusalLog
from tests.service.support import make_config, running
from tests.service.test_receivers import PB, post, proto_span, request_of

SECRET = "sk-proj-Zq81kLmN0pQrStUvWxYz4455aa"
LOGGER = "mast_otel.processors.service.refusals"


def _lines(caplog, reason: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == LOGGER and r.levelno == logging.WARNING and f": {reason} (" in r.getMessage()]


def test_http_refusals_are_logged_with_reason_and_address_once_per_interval(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    config = make_config(tmp_path, receiver={"max_body_bytes": 2048, "refusal_log_seconds": 60.0})
    with running(config) as server:
        now = [0.0]  # the interval's clock, moved by the test (a loaded machine may take seconds per request)
        server.ingest.refusal_log.clock = lambda: now[0]
        for _ in range(5):  # an exporter retrying the same refused request
            assert post(server, b"x", {"Content-Type": "text/plain"}).status_code == 415
        big = f'{{"resourceSpans": [], "note": "{SECRET * 100}"}}'.encode()
        assert post(server, big, {"Content-Type": "application/json", "Authorization": f"Bearer {SECRET}"}).status_code == 413
        assert post(server, f"not json {SECRET}".encode(), {"Content-Type": "application/json"}).status_code == 400
        bad = request_of(proto_span(os.urandom(16), os.urandom(8)), proto_span(os.urandom(16), b"\x01\x02"))
        assert post(server, bad.SerializeToString(), PB).status_code == 200  # kept one, rejected one
        media = _lines(caplog, "unsupported_media_type")
        assert len(media) == 1 and "127.0.0.1" in media[0] and "415" in media[0] and "http" in media[0]
        (too_large,) = _lines(caplog, "body_too_large")
        assert "127.0.0.1" in too_large and "413" in too_large and "max_body_bytes" in too_large
        (undecodable,) = _lines(caplog, "undecodable")
        assert "400" in undecodable and "JSON" in undecodable
        (partial,) = _lines(caplog, "partial_success")
        assert "1 span(s) not kept" in partial and "invalid_span_id 1" in partial
        now[0] = 60.0  # the interval passed: the next refusal is logged, with the count of those left out
        assert post(server, b"x", {"Content-Type": "text/plain"}).status_code == 415
        media = _lines(caplog, "unsupported_media_type")
        assert len(media) == 2 and "4 more refused" in media[1]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert SECRET not in logged and SECRET[:12] not in logged and "not json" not in logged


def test_grpc_refusals_are_logged_with_the_peer_address(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with running(make_config(tmp_path / "undecodable")) as server:
        with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            raw = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                                      request_serializer=lambda b: b, response_deserializer=lambda b: b)
            with pytest.raises(grpc.RpcError) as info:
                raw(b"\xff\xff\xff\xff")
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    config = make_config(tmp_path / "over", assembly={"max_buffered_bytes": 4000, "span_overhead_bytes": 464,
                                                      "pressure_eviction_seconds": 60})
    with running(config) as server:
        tid = os.urandom(16)  # fills the memory budget (the parent never arrives, nothing completes)
        full = request_of(*(proto_span(tid, os.urandom(8), parent=b"\x09" * 8) for _ in range(7)))
        assert post(server, full.SerializeToString()).status_code == 200
        with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            stub = TraceServiceStub(channel)
            for _ in range(3):
                with pytest.raises(grpc.RpcError) as info:
                    stub.Export(request_of(proto_span(os.urandom(16), os.urandom(8))))
                assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    (undecodable,) = [line for line in _lines(caplog, "undecodable") if "grpc" in line]
    assert "127.0.0.1" in undecodable and "INVALID_ARGUMENT" in undecodable
    (over,) = [line for line in _lines(caplog, "over_budget") if "grpc" in line]  # three refused, one line
    assert "127.0.0.1" in over and "RESOURCE_EXHAUSTED" in over and "memory budget" in over


def test_one_line_per_reason_and_address_per_interval_then_the_count(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    now = [0.0]
    refusals = RefusalLog(10.0, clock=lambda: now[0], max_pairs=2)
    for _ in range(3):
        refusals.refused("http", "body_too_large", "10.0.0.1", "413", "too large")
    refusals.refused("http", "body_too_large", "10.0.0.2", "413", "too large")  # another address: its own line
    refusals.refused("http", "over_budget", "10.0.0.1", "429", "over budget")  # another reason: its own line
    now[0] = 10.0
    refusals.refused("http", "over_budget", "10.0.0.1", "429", "over budget")
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(lines) == 4
    assert "10.0.0.2" in lines[1] and "over_budget" in lines[2] and "more refused" not in lines[3]
    # the first pair was forgotten (max_pairs), so its count is gone rather than kept without bound
    assert len(refusals._pairs) == 2
    now[0] = 20.0
    refusals.refused("http", "over_budget", "10.0.0.1", "429", "over budget")
    refusals.refused("http", "over_budget", "10.0.0.1", "429", "over budget")
    now[0] = 30.0
    refusals.refused("http", "over_budget", "10.0.0.1", "429", "over budget")
    assert "1 more refused" in caplog.records[-1].getMessage()
