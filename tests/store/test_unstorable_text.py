"""Text the store cannot hold (a NUL character) never reaches it: a span that holds one is
refused at the edge with a named partial-success reason, and the runs sent after it are stored,
on PostgreSQL (which refuses NUL in text) and SQLite alike. An API filter holding one is a 400,
not a 503 "store unavailable"."""

from __future__ import annotations

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from mast_otel.processors.ingest.decode import NUL_CHARACTER
from tests.ingest.otlp import capture, protobuf_of
from tests.service.support import emit_run, make_config, running, wait_for

PROTOBUF = {"Content-Type": "application/x-protobuf"}


def _send(server, spans) -> ExportTraceServiceResponse:
    answer = httpx.post(f"{server.http_url}/v1/traces", content=protobuf_of(spans), headers=PROTOBUF, timeout=30)
    assert answer.status_code == 200, answer.text
    return ExportTraceServiceResponse.FromString(answer.content)


def _stored(server, trace_id: str) -> dict | None:
    answer = httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}", timeout=30)
    return answer.json() if answer.status_code == 200 else None


@pytest.fixture(params=["sqlite", "postgresql"])
def store_section(request, tmp_path) -> dict:
    if request.param == "sqlite":
        return {"path": str(tmp_path / "d.sqlite")}
    return {"url": request.getfixturevalue("pg_url")}


def test_one_nul_span_then_a_clean_run_both_stored(tmp_path, store_section):
    config = make_config(tmp_path, store=store_section)
    with running(config) as server:
        provider, exporter = capture("svc\x00bad")  # the resource's service name: cleaned
        bad_trace, _ = emit_run(provider, agent="triage", model="gpt\x00-4o",  # the chat spans' model: refused
                                tools=(("kubectl\x00get", "a"), ("kubectl_get", "b")))  # one tool name: refused
        answer = _send(server, exporter.get_finished_spans())
        assert answer.partial_success.rejected_spans == 3  # two chat spans, one tool span
        assert f"{NUL_CHARACTER}=3" in answer.partial_success.error_message
        assert "NUL character" in answer.partial_success.error_message

        provider, exporter = capture("svc-good")
        good_trace, _ = emit_run(provider, agent="triage", model="gpt-4o")
        assert not _send(server, exporter.get_finished_spans()).HasField("partial_success")

        good = wait_for(lambda: _stored(server, good_trace), timeout=60)
        bad = wait_for(lambda: _stored(server, bad_trace), timeout=60)
        assert good["service_name"] == "svc-good" and good["model"] == "gpt-4o"
        assert bad["service_name"] == "svc\ufffdbad"  # the name kept, the NUL replaced
        assert "\x00" not in httpx.get(f"{server.http_url}/v1/diagnoses", timeout=30).text

        # every filter and path parameter holding a NUL is refused before any query
        for url in ("/v1/diagnoses?model=gpt%00", "/v1/diagnoses?agent=%00", "/v1/diagnoses?service=a%00b",
                    "/v1/diagnoses/" + "0" * 31 + "%00", "/v1/severity?model=%00"):
            refused = httpx.get(server.http_url + url, timeout=30)
            assert refused.status_code == 400, (url, refused.status_code, refused.text)
            assert "NUL" in refused.json()["detail"]
        page = httpx.get(f"{server.http_url}/runs?model=x%00", headers={"Accept": "text/html"}, timeout=30)
        assert page.status_code == 400 and "NUL" in page.text
        # the outcomes body: a NUL anywhere is a validation error, never a store error
        for body in ({"trace_id": good_trace, "outcome": "failure\x00"}, {"trace_id": good_trace[:31] + "\x00", "outcome": "failure"}):
            assert httpx.post(f"{server.http_url}/v1/outcomes", json=body, timeout=30).status_code == 422
        assert httpx.get(f"{server.http_url}/readyz", timeout=30).status_code == 200
