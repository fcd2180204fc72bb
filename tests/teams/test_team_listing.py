"""``analyze`` (table, JSON, HTML) and ``/v1/diagnoses/{id}`` list a run's agents, handoffs and
tool ownership, over the recorded team runs (tests/teams/corpus), as the run page's lanes do."""

from __future__ import annotations

import httpx
import pytest

from mast_otel.processors.offline.analyze import analyze, as_table
from mast_otel.processors.offline.report import render
from tests.service.support import make_config, running, wait_for
from tests.teams.corpus_files import manifests, recordings

CONTENT = [r for r in recordings() if r.variant == "content"]
CREW = next(r for r in CONTENT if r.framework == "crewai" and r.scenario.name == "clean")


@pytest.mark.parametrize("recording", CONTENT, ids=lambda r: r.id)
def test_analyze_lists_every_agent_that_acted(recording):
    """The agents are those the recording's manifest says made the model calls (``asked_by``; a
    call outside any agent names none), whichever framework recorded the team."""
    asked = {a for a in manifests()[recording.framework]["runs"][recording.scenario.name]["asked_by"] if a}
    summary = analyze([str(recording.path)])
    assert set().union(*(set(run["team"]["agents"]) for run in summary["runs"])) == asked


def test_a_crew_of_three_shows_all_three_with_its_handoffs_and_who_called_what():
    summary = analyze([str(CREW.path)])
    (run,) = summary["runs"]
    team = run["team"]
    assert team["agents"] == ["coordinator", "operator", "verifier"]
    assert [(h["from"], h["to"]) for h in team["handoffs"]] == [("coordinator", "operator"), ("coordinator", "verifier")]
    owners = {(t["tool"], t["agent"]) for t in team["tool_calls"] if t["kind"] != "handoff"}
    assert owners == {("get_pods", "operator"), ("restart_deployment", "operator"), ("check_health", "verifier")}
    handoff_spans = {t["span_id"] for t in team["tool_calls"] if t["kind"] == "handoff"}
    assert {h["span_id"] for h in team["handoffs"]} == handoff_spans and len(handoff_spans) == 2
    table = as_table(summary)
    assert "coordinator, operator, verifier" in table
    assert "handoff coordinator -> operator" in table and "verifier called check_health" in table
    html = render(summary)
    assert "coordinator, operator, verifier" in html and "handoff coordinator -&gt; verifier" in html


def test_the_api_lists_the_same_team_as_analyze(tmp_path):
    expected = analyze([str(CREW.path)])["runs"][0]
    with running(make_config(tmp_path), **{}) as server:
        for line in CREW.path.read_text().splitlines():
            assert httpx.post(f"{server.http_url}/v1/traces", content=line,
                              headers={"Content-Type": "application/json"}).status_code == 200
        trace_id = expected["trace_id"]
        wait_for(lambda: server.store.get(trace_id), timeout=20)
        got = httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}").json()
        page = httpx.get(f"{server.http_url}/runs/{trace_id}").text
    assert got["team"] == expected["team"]
    assert got["team"]["agents"] == ["coordinator", "operator", "verifier"]
    assert all(f"{h['from']} → {h['to']}" in page for h in got["team"]["handoffs"])  # the run page's lanes agree
