"""The diagnosis API: filters, paging, 404, outcomes before and after diagnosis, readiness."""

from __future__ import annotations

import re

from datetime import datetime, timezone

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from mast_otel.wire import attributes as A

from tests.service.support import emit_run, metric, provider_for, running, wait_for

LOOP = (("kubectl_logs", "same"),) * 3
BAD_CHECK = (("kubectl_get", "a"), ("check_rollout", "b"))


def _runs(server):
    """Five runs: two agents, two models, one with repetition, one fatal with a failed check."""
    provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
    runs = {
        "loop": emit_run(provider, agent="triage", model="gpt-4o", tools=LOOP)[0],
        "fatal": emit_run(provider, agent="triage", model="gpt-4o", tools=BAD_CHECK, claimed_success=True, verification=False)[0],
        "clean-a": emit_run(provider, agent="triage", model="claude")[0],
        "clean-b": emit_run(provider, agent="planner", model="claude")[0],
        "clean-c": emit_run(provider, agent="planner", model="claude", outcome="success")[0],
    }
    provider.shutdown()
    wait_for(lambda: all(server.store.get(t) for t in runs.values()))
    return runs


def test_filters_and_paging(config):
    with running(config) as server:
        runs = _runs(server)
        url = f"{server.http_url}/v1/diagnoses"

        def ids(**params):
            body = httpx.get(url, params=params).json()
            return body["total"], {item["trace_id"] for item in body["items"]}

        assert ids() == (5, set(runs.values()))
        assert ids(model="claude") == (3, {runs["clean-a"], runs["clean-b"], runs["clean-c"]})
        assert ids(agent="planner") == (2, {runs["clean-b"], runs["clean-c"]})
        assert ids(agent="triage", model="gpt-4o") == (2, {runs["loop"], runs["fatal"]})
        assert ids(mode="FM-1.3") == (1, {runs["loop"]})
        assert ids(mode="1.3") == (1, {runs["loop"]})  # MAST-Data style ids are accepted
        assert ids(fatal="true") == (0, set())  # FM-3.3 is recoverable by default
        assert ids(mode="FM-3.3") == (1, {runs["fatal"]})
        assert ids(outcome="success") == (1, {runs["clean-c"]})
        assert ids(service="sre-agent")[0] == 5 and ids(service="nope")[0] == 0
        now = datetime.now(timezone.utc)
        assert ids(since=(now.timestamp() - 600))[0] == 5
        assert ids(until=now.replace(year=2001).isoformat())[0] == 0

        pages = [httpx.get(url, params={"limit": 2, "offset": o}).json() for o in (0, 2, 4)]
        assert [len(p["items"]) for p in pages] == [2, 2, 1] and all(p["total"] == 5 for p in pages)
        assert len({i["trace_id"] for p in pages for i in p["items"]}) == 5

        assert httpx.get(url, params={"mode": "FM-9.9"}).status_code == 422
        assert httpx.get(url, params={"outcome": "maybe"}).status_code == 422
        assert httpx.get(url, params={"limit": 0}).status_code == 422

        one = httpx.get(f"{url}/{runs['fatal']}").json()
        mode = one["modes"][0]
        assert mode["mode"] == "FM-3.3" and mode["explanations"] == ["claimed success after a failed check"]
        assert len(mode["evidence_span_ids"]) == 1 and one["findings"][0]["detector"] == "test.verify"
        assert httpx.get(f"{url}/{'0' * 32}").status_code == 404


def test_outcomes_before_and_after_diagnosis(config):
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        early, ids = emit_run(provider, end_root=False, tools=LOOP)  # in flight: not diagnosed yet
        r = httpx.post(f"{server.http_url}/v1/outcomes", json={"trace_id": early, "outcome": "failure", "score": 0.25})
        assert r.status_code == 202 and r.json()["status"] == "pending"
        assert metric(server, "mast_outcomes_total") == 0
        provider.shutdown()  # its agent span never ends: the run is flushed at shutdown below

        late_provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        later, _ = emit_run(late_provider, tools=LOOP)
        late_provider.shutdown()
        wait_for(lambda: server.store.get(later))
        r = httpx.post(f"{server.http_url}/v1/outcomes", json={"trace_id": later.upper(), "outcome": "success", "score": 1})
        assert r.status_code == 200 and r.json()["status"] == "applied"
        assert r.json()["diagnosis"]["outcome"] == "success" and r.json()["diagnosis"]["score"] == 1
        assert metric(server, "mast_outcomes_total", outcome="success", agent="triage") == 1
        assert metric(server, "mast_failure_mode_outcomes_total", mode="FM-1.3", outcome="success") == 1

        for bad in ({"trace_id": "xyz", "outcome": "success"}, {"trace_id": later, "outcome": "great"},
                    {"trace_id": later, "outcome": "success", "extra": 1}, {"trace_id": later, "outcome": "success", "score": "NaN"}):
            assert httpx.post(f"{server.http_url}/v1/outcomes", json=bad).status_code == 422, bad
        assert metric(server, "mast_outcomes_total") == 1
    # The in-flight run was flushed at shutdown, with its pending outcome applied.
    with running(config) as server:
        d = server.store.get(early)
        assert d.outcome == "failure" and d.score == 0.25 and d.modes == ["FM-1.3"]


def test_pending_outcome_is_counted_at_diagnosis(config):
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        # Report the outcome for a trace id before any of its spans arrive.
        trace_id = "ab" * 16
        r = httpx.post(f"{server.http_url}/v1/outcomes", json={"trace_id": trace_id, "outcome": "failure"})
        assert r.status_code == 202
        parent = set_span_in_context(NonRecordingSpan(SpanContext(int(trace_id, 16), 0x1234, False, TraceFlags(1))))
        tracer = provider.get_tracer("t")
        with tracer.start_as_current_span("invoke_agent triage", context=parent, attributes={A.GEN_AI_OPERATION_NAME: "invoke_agent"}):
            for _ in range(3):
                with tracer.start_as_current_span("execute_tool kubectl_logs", attributes={
                    A.GEN_AI_OPERATION_NAME: "execute_tool", A.GEN_AI_TOOL_NAME: "kubectl_logs", A.MAST_TOOL_ARGS_HASH: "x"}):
                    pass
        provider.shutdown()
        d = wait_for(lambda: server.store.get(trace_id))
        assert d.outcome == "failure"
        assert metric(server, "mast_outcomes_total", outcome="failure") == 1
        assert metric(server, "mast_failure_mode_outcomes_total", mode="FM-1.3", outcome="failure") == 1


def test_one_diagnosis_says_what_to_do_and_names_its_evidence_steps(config):
    """``/v1/diagnoses/{id}``: each finding and mode carries its what-to-do (the taxonomy's definition, the guard,
    the settings, the docs section) and its evidence as step labels beside the span ids; lists stay lean."""
    from mast_otel.processors import taxonomy

    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        failed, ids = emit_run(provider, tools=LOOP, outcome="failure")
        provider.shutdown()
        wait_for(lambda: server.store.get(failed))
        body = httpx.get(f"{server.http_url}/v1/diagnoses/{failed}").json()
        loop = next(f for f in body["findings"] if f["mode"] == "FM-1.3")
        todo = loop["what_to_do"]
        assert todo["description"] == taxonomy.get("FM-1.3").definition and todo["guards"] == ["loop"]
        assert "detection.repetition.min_tool_repeats" in todo["settings"]
        assert todo["docs"] == "docs/modes.md#fm-13-step-repetition"
        assert loop["evidence_steps"] == [f"#{i} tool kubectl_logs" for i in range(3)]
        assert loop["evidence_span_ids"] == [ids[f"tool-{i}"] for i in range(3)]
        mode = next(m for m in body["modes"] if m["mode"] == "FM-1.3")
        assert mode["what_to_do"] == todo and mode["evidence_steps"] == loop["evidence_steps"]
        listed = httpx.get(f"{server.http_url}/v1/diagnoses").json()["items"][0]
        assert listed["findings"][0]["what_to_do"] is None


def test_health_readiness_and_metrics(config):
    with running(config) as server:
        assert httpx.get(f"{server.http_url}/healthz").json() == {"status": "ok"}
        assert httpx.get(f"{server.http_url}/readyz").status_code == 200
        text = httpx.get(f"{server.http_url}/metrics").text
        for name in ("mast_traces_in_flight", "mast_diagnosis_latency_seconds_bucket"):
            assert name in text
        server._ready = False
        assert httpx.get(f"{server.http_url}/readyz").status_code == 503
        server._ready = True


def test_a_failed_run_names_the_agent_and_step_in_the_api_and_on_its_page(config):
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        failed, ids = emit_run(provider, tools=LOOP, outcome="failure")
        clean, _ = emit_run(provider, outcome="success")
        provider.shutdown()
        wait_for(lambda: server.store.get(failed) and server.store.get(clean))
        body = httpx.get(f"{server.http_url}/v1/diagnoses/{failed}").json()
        # FM-1.3 is recoverable, but the run failed: the loop's decisive step, its first repetition, is named
        # machine fields keep the span id; beside it the step as a person reads it: number, kind and name
        assert body["attribution"] == {"agent": "triage", "step_span_id": ids["tool-1"], "source": "rules",
                                       "mode": "FM-1.3", "step_index": 1, "ended_by": None,
                                       "step_label": "#1 tool kubectl_logs"}
        assert httpx.get(f"{server.http_url}/v1/diagnoses/{clean}").json()["attribution"] is None
        page = httpx.get(f"{server.http_url}/runs/{failed}").text
        assert 'id="attribution"' in page and f'href="#span-{ids["tool-1"]}"' in page
        went_wrong = re.search(r'<tr id="attribution">.*?</tr>', page, re.S).group(0)
        assert re.search(r">\s*#1 tool kubectl_logs\s*</a>", went_wrong) and f">{ids['tool-1']}<" not in went_wrong
        assert 'id="attribution"' not in httpx.get(f"{server.http_url}/runs/{clean}").text


def test_an_outcome_posted_later_decides_the_attribution(config):
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        early, early_ids = emit_run(provider, tools=LOOP, end_root=False)
        assert httpx.post(f"{server.http_url}/v1/outcomes", json={"trace_id": early, "outcome": "failure"}).status_code == 202
        later, ids = emit_run(provider, tools=LOOP)
        provider.shutdown()
        wait_for(lambda: server.store.get(later))
        assert httpx.get(f"{server.http_url}/v1/diagnoses/{later}").json()["attribution"] is None  # not known to fail
        r = httpx.post(f"{server.http_url}/v1/outcomes", json={"trace_id": later, "outcome": "failure"})
        assert r.json()["diagnosis"]["attribution"]["step_span_id"] == ids["tool-1"]
        assert server.store.get(later).attribution.step_span_id == ids["tool-1"]
        r = httpx.post(f"{server.http_url}/v1/outcomes", json={"trace_id": later, "outcome": "success"})
        assert r.json()["diagnosis"]["attribution"] is None and server.store.get(later).attribution is None
    with running(config) as server:  # the in-flight run, flushed at shutdown with its pending outcome
        d = server.store.get(early)
        assert d.outcome == "failure" and d.attribution.step_span_id == early_ids["tool-1"]


def test_unknown_query_parameters_are_refused_naming_the_known_ones(config):
    """``?service_name=`` is not the ``service`` filter: ignored, it would answer every run."""
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_id = emit_run(provider, agent="triage")[0]
        provider.shutdown()
        wait_for(lambda: server.store.get(trace_id))
        url = f"{server.http_url}/v1/diagnoses"
        wrong = httpx.get(url, params={"service_name": "nope"})
        assert wrong.status_code == 400, wrong.text
        detail = wrong.json()["detail"]
        assert "service_name" in detail and all(name in detail for name in ("service", "model", "agent", "mode", "limit"))
        assert httpx.get(url, params={"service": "nope"}).json()["total"] == 0
        assert httpx.get(url, params={"agent": "triage"}).json()["total"] == 1
        assert httpx.get(f"{url}/{trace_id}", params={"include": "steps", "inlcude": "x"}).status_code == 400
        assert httpx.get(f"{url}/{trace_id}", params={"include": "steps"}).status_code == 200
        severity = httpx.get(f"{server.http_url}/v1/severity", params={"models": "gpt-4o"})
        assert severity.status_code == 400 and "model" in severity.json()["detail"]
