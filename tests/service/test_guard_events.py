"""Guard interventions through the real processor: counted once per event, findings marked prevented, shown on the timeline."""

from __future__ import annotations

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

from mast_otel.instrumentation import agent_run, configure, tool_call
from mast_otel.instrumentation.guards import GuardConfig, GuardRefusal
from mast_otel.processors.detectors import LiveDetection, diagnose
from tests.service.support import metric, provider_for, running, wait_for


def _guarded_run(server, config: GuardConfig) -> str:
    provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
    configure(tracer_provider=provider)
    try:
        with agent_run("triage", max_steps=20, guards=config) as run:
            for _ in range(5):
                try:
                    with tool_call("get_pods", kind="read", arguments={"ns": "prod"}) as call:
                        call.set_result({"phase": "CrashLoopBackOff"})
                except GuardRefusal:
                    pass
            with tool_call("restart", kind="write", arguments={"pod": "api"}) as call:
                call.set_result("ok")
            run.finish("Fixed by a restart.")
        trace_id = format(run.span.get_span_context().trace_id, "032x")
    finally:
        provider.shutdown()
        configure(tracer_provider=None)
    return trace_id


def _diagnosis(server, trace_id: str) -> dict:
    def fetch():
        response = httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}", params={"include": "steps"})
        return response.json() if response.status_code == 200 else None
    return wait_for(fetch)


def test_enforced_interventions_are_counted_once_and_mark_the_finding_prevented(config):
    with running(config, diagnose=diagnose, live_detection=LiveDetection) as server:
        trace_id = _guarded_run(server, GuardConfig.all("enforce"))
        d = _diagnosis(server, trace_id)
        by_mode = {f["mode"]: f for f in d["findings"]}
        assert by_mode["FM-1.3"]["prevented_by"] == "loop"
        assert next(m for m in d["modes"] if m["mode"] == "FM-1.3")["prevented_by"] == "loop"
        assert "FM-3.2" not in by_mode  # the gate refused the unchecked claim: the run never made it
        guarded = [(s["tool_name"] or s["name"], g["guard"], g["action"]) for s in d["steps"] for g in s["guard_interventions"]]
        assert guarded == [("invoke_agent triage", "verification", "refused_finish"),
                           ("get_pods", "loop", "blocked"), ("get_pods", "loop", "blocked")]
        labels = dict(service_name="sre-agent", agent="triage", mode="enforce")
        assert metric(server, "mast_guard_interventions_total", guard="loop", action="blocked", **labels) == 2
        assert metric(server, "mast_guard_interventions_total", guard="verification", action="refused_finish",
                      **labels) == 1
        html = httpx.get(f"{server.http_url}/runs/{trace_id}").text
        assert html.count('data-guard="loop" data-action="blocked"') == 2
        assert 'data-prevented-by="loop"' in html


def test_observed_interventions_are_counted_but_prevent_nothing(config):
    with running(config, diagnose=diagnose, live_detection=LiveDetection) as server:
        trace_id = _guarded_run(server, GuardConfig.all("observe"))
        d = _diagnosis(server, trace_id)
        by_mode = {f["mode"]: f for f in d["findings"]}
        assert by_mode["FM-1.3"]["prevented_by"] is None
        assert by_mode["FM-3.2"]["prevented_by"] is None  # observed only: the unchecked claim went through
        assert metric(server, "mast_guard_interventions_total", guard="loop", mode="observe", action="recorded") == 2
        assert metric(server, "mast_guard_interventions_total", mode="enforce") == 0
