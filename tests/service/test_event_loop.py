"""The HTTP receiver answers the same on either event loop (``receiver.event_loop``): uvloop is
there for its lower CPU per request, never for different answers."""

from __future__ import annotations

import gzip
import os
import sys

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from mast_otel.processors.service.receivers.components import event_loop
from tests.service.support import make_config, metric, running
from tests.service.test_receivers import PB, proto_span, request_of, status_of

pytest.importorskip("uvloop")


def _loop_class(server) -> str:
    """The class of the loop the HTTP receiver's listening socket is served by."""
    return type(server._http._server.servers[0].get_loop()).__module__


def _answers(server) -> list[tuple]:
    """What a client sees for a plain request, a partially rejected one, a gzip body and one over the limit."""
    tid = os.urandom(16)
    good = request_of(proto_span(tid, os.urandom(8))).SerializeToString()
    partial = request_of(proto_span(tid, os.urandom(8)), proto_span(tid, b"\x01\x02")).SerializeToString()
    zipped = gzip.compress(request_of(proto_span(tid, os.urandom(8))).SerializeToString())
    big = request_of(proto_span(os.urandom(16), os.urandom(8), name="x" * 100_000)).SerializeToString()
    url = f"{server.http_url}/v1/traces"
    seen = []
    for body, headers in ((good, PB), (partial, PB), (zipped, {**PB, "Content-Encoding": "gzip"}), (big, PB)):
        r = httpx.post(url, content=body, headers=headers)
        if r.status_code == 200:
            answer = ExportTraceServiceResponse.FromString(r.content)
            seen.append((200, r.headers["content-type"], answer.partial_success.rejected_spans,
                         "invalid_span_id" in answer.partial_success.error_message))
        else:
            seen.append((r.status_code, r.headers["content-type"], "limit" in status_of(r).message))
    seen.append(metric(server, "mast_spans_received_total", protocol="http"))
    return seen


def test_both_loops_give_the_same_answers(tmp_path):
    answers, loops = {}, {}
    for name in ("asyncio", "uvloop"):
        config = make_config(tmp_path / name, receiver={"max_body_bytes": 64 * 1024, "event_loop": name})
        with running(config) as server:
            loops[name] = _loop_class(server)
            answers[name] = _answers(server)
    assert loops == {"asyncio": "asyncio.unix_events", "uvloop": "uvloop"}
    assert answers["asyncio"] == answers["uvloop"] == [
        (200, "application/x-protobuf", 0, False),
        (200, "application/x-protobuf", 1, True),
        (200, "application/x-protobuf", 0, False),
        (413, "application/x-protobuf", True),
        3.0,
    ]


def test_auto_is_uvloop_when_installed_and_asyncio_without_it(monkeypatch):
    assert event_loop("auto") == "uvloop"
    assert event_loop("asyncio") == "asyncio"
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop now raises ImportError
    assert event_loop("auto") == "asyncio"
    with pytest.raises(RuntimeError, match="receiver.event_loop is uvloop"):
        event_loop("uvloop")
