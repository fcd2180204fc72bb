"""A team run through the running processor: counted once, each mode also under the agent it concerns."""

from __future__ import annotations

import json

import httpx

from mast_otel.processors.service.server import ProcessorServer
from tests.service.support import make_config, metric, wait_for
from tests.teams.corpus_files import CORPUS


def test_a_team_runs_modes_are_counted_under_the_agents_they_concern(tmp_path):
    body = (CORPUS / "openai-agents-handoffs" / "withheld_failure.json").read_text().splitlines()[0]
    trace_id = next(s["traceId"] for rs in json.loads(body)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"])
    server = ProcessorServer(make_config(tmp_path, assembly={"grace_seconds": 0.2}))  # the real detectors
    server.start()
    try:
        assert httpx.post(f"{server.http_url}/v1/traces", content=body,
                          headers={"Content-Type": "application/json"}).status_code == 200
        wait_for(lambda: server.store.get(trace_id), timeout=30)
        diagnosis = httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}").json()
        assert metric(server, "mast_traces_total", agent="coordinator") == 1 and metric(server, "mast_traces_total") == 1
        # the operator reported success over its failed restart; the coordinator claimed it unchecked
        assert metric(server, "mast_failure_mode_agents_total", mode="FM-2.4", agent="operator", team="coordinator") == 1
        assert metric(server, "mast_failure_mode_agents_total", mode="FM-3.2", agent="coordinator") == 1
        assert metric(server, "mast_failure_mode_agents_total", agent="Agent workflow") == 0  # a wrapper is no agent
        # the run's own counters keep the run's agent, so ratios per agent stay ratios of runs
        assert metric(server, "mast_failure_mode_traces_total", mode="FM-2.4", agent="coordinator") == 1
        modes = {m["mode"]: m["agents"] for m in diagnosis["modes"]}
        assert modes["FM-2.4"] == ["operator"] and modes["FM-3.2"] == ["coordinator"]
        assert diagnosis["attribution"]["agent"] == "operator"  # the withheld failure is the decisive mistake
        assert diagnosis["attribution"]["ended_by"] == "coordinator"  # shown beside it: the run ended elsewhere
        page = httpx.get(f"{server.http_url}/runs/{trace_id}").text
        assert 'data-field="attribution-ended-by">coordinator<' in page
    finally:
        server.stop()
