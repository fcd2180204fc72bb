"""Outcomes posted for traces that never arrive expire (merge.pending_outcome_ttl_seconds),
in the store and in memory; those whose trace does arrive in time are applied."""

from __future__ import annotations

import sqlite3
import time

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from mast_otel.wire import attributes as A
from tests.service.support import make_config, metric, provider_for, running, wait_for

# Long enough that the fresh run (export, 0.2 s grace, sweep) is diagnosed well inside it on a
# loaded machine; 0.5 s was not.
TTL = 2.0


def _run_of(server, trace_id: str) -> None:
    """One agent run under a chosen trace id (as an application that picked it in advance)."""
    provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
    parent = set_span_in_context(NonRecordingSpan(SpanContext(int(trace_id, 16), 0x1234, False, TraceFlags(1))))
    with provider.get_tracer("t").start_as_current_span(
            "invoke_agent triage", context=parent, attributes={A.GEN_AI_OPERATION_NAME: "invoke_agent"}):
        pass
    provider.shutdown()


def _post(server, trace_id: str) -> None:
    r = httpx.post(f"{server.http_url}/v1/outcomes", json={"trace_id": trace_id, "outcome": "failure"})
    assert r.status_code == 202


@pytest.mark.parametrize("store, prune_every", [(True, 1), (True, 1000), (False, 1000)])
def test_pending_outcomes_of_unknown_traces_expire(tmp_path, store, prune_every):
    """Pruned from the store (``prune_every: 1``), or refused when taken before a prune ran."""
    config = make_config(tmp_path, merge={"pending_outcome_ttl_seconds": TTL},
                         store={"enabled": store, "prune_every": prune_every})
    stale, fresh = "a1" * 16, "b2" * 16
    with running(config) as server:
        _post(server, stale)
        time.sleep(TTL + 0.2)
        _post(server, fresh)  # also prunes what expired
        if store and prune_every == 1:
            with sqlite3.connect(config.store.path) as db:
                kept = {row[0] for row in db.execute("SELECT trace_id FROM pending_outcomes")}
            assert kept == {fresh}
        _run_of(server, stale)
        _run_of(server, fresh)
        wait_for(lambda: metric(server, "mast_traces_total") == 2)
        assert metric(server, "mast_outcomes_total", outcome="failure") == 1  # the fresh one only
        if store:
            assert server.store.get(stale).outcome is None and server.store.get(fresh).outcome == "failure"
