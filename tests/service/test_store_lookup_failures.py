"""A store look-up a batch depends on fails (a pool timeout, a database gone away): the run is
neither diagnosed on a guess nor settled in the log; it waits and is diagnosed once, with its
pending outcome, when the store answers again."""

from __future__ import annotations

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from mast_otel.wire import attributes as A
from tests.service.support import make_config, metric, provider_for, running, wait_for


def _run_of(server, trace_id: str) -> None:
    """An agent run with two tool calls under a chosen trace id."""
    provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
    parent = set_span_in_context(NonRecordingSpan(SpanContext(int(trace_id, 16), 0x1234, False, TraceFlags(1))))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("invoke_agent triage", context=parent,
                                      attributes={A.GEN_AI_OPERATION_NAME: "invoke_agent"}):
        for tool in ("kubectl_get", "kubectl_logs"):
            with tracer.start_as_current_span(f"execute_tool {tool}", attributes={
                    A.GEN_AI_OPERATION_NAME: "execute_tool", A.GEN_AI_TOOL_NAME: tool}):
                pass
    provider.shutdown()


def _failing(server, name: str, times: int, calls: list[str]):
    """The store's ``name`` look-up raising the store's own error ``times`` times, then answering."""
    real = getattr(server.store, name)
    error = server.store.errors[0] if isinstance(server.store.errors, tuple) else server.store.errors

    def look_up(*args, **kwargs):
        calls.append(name)
        if calls.count(name) <= times:
            raise error(f"injected: {name} timed out waiting for a connection")
        return real(*args, **kwargs)
    setattr(server.store, name, look_up)


def test_a_failed_look_up_defers_the_run_until_the_store_answers(tmp_path):
    config = make_config(tmp_path, store={"retry_interval_seconds": 0.2})
    trace_id = "c3" * 16
    with running(config) as server:
        r = httpx.post(f"{server.http_url}/v1/outcomes", json={"trace_id": trace_id, "outcome": "failure"})
        assert r.status_code == 202  # pending: the run has not arrived
        settled: list[str] = []
        wal_settle = server.ingest.wal.settle
        server.ingest.wal.settle = lambda ids, through: (settled.extend(ids), wal_settle(ids, through))[1]
        calls: list[str] = []
        _failing(server, "existing", 2, calls)
        _failing(server, "take_pending_outcomes", 1, calls)
        _run_of(server, trace_id)
        wait_for(lambda: calls.count("existing") >= 2)
        assert trace_id not in settled and metric(server, "mast_traces_total") == 0  # not diagnosed on a guess
        wait_for(lambda: metric(server, "mast_traces_total") == 1)
        wait_for(lambda: trace_id in settled)
        assert metric(server, "mast_outcomes_total", outcome="failure") == 1
        stored = server.store.get(trace_id)
        assert stored is not None and stored.outcome == "failure"
        assert {s.name for s in server.ingest.get_run(trace_id).spans} == {
            "invoke_agent triage", "execute_tool kubectl_get", "execute_tool kubectl_logs"}
        assert calls.count("existing") == 4 and calls.count("take_pending_outcomes") == 2
        assert metric(server, "mast_traces_total") == 1 and settled.count(trace_id) == 1


def test_deferred_runs_past_the_cap_wait_in_the_log_for_a_restart(tmp_path, caplog):
    """The store fails every look-up while five runs complete: two stay deferred in memory
    (merge.max_deferred_runs), three are let go of, counted and logged once, kept in the log;
    the two are diagnosed when the store answers, the three when the processor next starts."""
    config = make_config(tmp_path, store={"retry_interval_seconds": 0.2}, merge={"max_deferred_runs": 2})
    trace_ids = [f"{i:02x}" * 16 for i in range(0xd1, 0xd6)]
    with running(config) as server:
        failing = [True]
        real = server.store.existing
        error = server.store.errors[0] if isinstance(server.store.errors, tuple) else server.store.errors

        def existing(*args, **kwargs):
            if failing[0]:
                raise error("injected: existing timed out waiting for a connection")
            return real(*args, **kwargs)
        server.store.existing = existing
        for trace_id in trace_ids:
            _run_of(server, trace_id)
        wait_for(lambda: metric(server, "mast_deferred_runs_released_total") == 3)
        assert len(server.ingest.merge._deferred) == 2 and metric(server, "mast_traces_total") == 0
        failing[0] = False
        wait_for(lambda: metric(server, "mast_traces_total") == 2)
        first = {t for t in trace_ids if server.store.get(t) is not None}
        assert len(first) == 2
    released = [r for r in caplog.records if "merge.max_deferred_runs" in r.getMessage()]
    assert len(released) == 1 and released[0].levelname == "ERROR"
    with running(config) as server:  # the log replays the three let go of
        wait_for(lambda: all(server.store.get(t) is not None for t in trace_ids))
        assert metric(server, "mast_traces_total") == 3
