"""Attribution labels of a team corpus: a scenario's responsible agent and step, resolved per recording, scored by eval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mast_otel.processors.team import fold as agent_key, same_agent
from mast_otel.processors.cli import main
from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.ingest.corpus import load_corpus, resolve_steps, scenario_labels
from mast_otel.processors.ingest.files import LoadError, LoadReport
from mast_otel.processors.ingest.responsible import Responsible, Unresolved, locate
from mast_otel.processors.offline.attribution_scoring import AttributionCase, score_attribution


def _attrs(values: dict) -> list[dict]:
    kinds = {bool: "boolValue", int: "intValue", str: "stringValue"}
    return [{"key": k, "value": {kinds[type(v)]: str(v) if isinstance(v, int) and not isinstance(v, bool) else v}}
            for k, v in values.items()]


def team_trace(trace_id: str) -> dict:
    """A coordinator that hands a fix to a fixer, whose check fails; the coordinator then ends the run.

    Span ids are ``<trace prefix>-<step>`` in hex, so a test can name the step it expects."""
    spans = []

    def span(key: str, parent: str | None, name: str, t: int, end: int, **attrs) -> str:
        span_id = f"{trace_id[:8]}{key:0>8}"
        spans.append({"traceId": trace_id, "spanId": span_id, "parentSpanId": parent or "", "name": name, "kind": 1,
                      "startTimeUnixNano": str(10**18 + t * 10**6), "endTimeUnixNano": str(10**18 + end * 10**6),
                      "attributes": _attrs(attrs), "status": {}})
        return span_id

    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
    coordinator = span("a", None, "invoke_agent Coordinator", 0, 100, **{
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Coordinator", "mast.run.termination_reason": "final_answer"})
    span("c1", coordinator, "chat m", 1, 2, **chat)
    fixer = span("f", coordinator, "invoke_agent fixer", 3, 90, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "fixer"})
    span("f1", fixer, "chat m", 4, 5, **chat)
    span("f2", fixer, "execute_tool restart", 6, 7, **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "restart",
                                                       "mast.tool.kind": "write"})
    span("f3", fixer, "chat m", 8, 9, **chat)
    span("f4", fixer, "execute_tool check_health", 10, 11, **{
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "check_health", "mast.tool.kind": "verify",
        "mast.tool.verification.passed": False})
    span("c2", coordinator, "chat m", 95, 96, **chat)
    return {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "team"})}, "scopeSpans": [{"spans": spans}]}]}


def span_id(trace_id: str, key: str) -> str:
    return f"{trace_id[:8]}{key:0>8}"


LABELS = {"scenarios": {
    "failed_check": {"expected": ["FM-3.1"], "allowed": [], "near_miss_of": None, "description": "the fixer's check fails",
                     "responsible": {"agent": "fixer", "tool": "check_health", "occurrence": 1}},
    "stopped": {"expected": ["FM-3.1"], "allowed": [], "near_miss_of": None, "description": "the coordinator stops",
                "responsible": {"agent": "coordinator", "tool": None, "occurrence": -1}},
    "ghost": {"expected": ["FM-3.1"], "allowed": [], "near_miss_of": None, "description": "names an agent not in the run",
              "responsible": {"agent": "reviewer", "tool": None, "occurrence": 1}},
    "clean": {"expected": [], "allowed": ["FM-3.1"], "near_miss_of": None, "description": "no mistake labelled",
              "responsible": None},
}}
TRACES = {"failed_check": "aaaa0000" * 4, "stopped": "bbbb0000" * 4, "ghost": "cccc0000" * 4, "clean": "dddd0000" * 4}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "crewai").mkdir()
    (tmp_path / "labels.json").write_text(json.dumps(LABELS))
    for scenario, trace_id in TRACES.items():
        (tmp_path / "crewai" / f"{scenario}.json").write_text(json.dumps(team_trace(trace_id)))
    return tmp_path


def test_the_responsible_step_resolves_to_a_span_of_each_recording_and_an_unresolvable_one_is_skipped(corpus):
    report = LoadReport()
    loaded = load_corpus(corpus, report)
    for run in loaded:  # steps are located once the run is diagnosed, as eval does
        rule_findings(run)
    runs = {r.labels["scenario"]: r for r in resolve_steps(loaded, report)}
    assert sorted(runs) == ["clean", "failed_check", "stopped"]
    assert runs["failed_check"].labels["attribution"] == {"agent": "fixer", "step": span_id(TRACES["failed_check"], "f4")}
    # "coordinator" names the agent span "Coordinator"; -1 is its last model call
    assert runs["stopped"].labels["attribution"] == {"agent": "coordinator", "step": span_id(TRACES["stopped"], "c2")}
    assert "attribution" not in runs["clean"].labels
    (skipped,) = report.skipped
    assert "ghost.json" in skipped and "responsible step not found" in skipped and "'reviewer'" in skipped
    assert "Coordinator, fixer" in skipped  # says which agents there were


def test_occurrences_count_that_agents_steps_in_start_order(corpus):
    (run,) = [r for r in load_corpus(corpus) if r.labels["scenario"] == "clean"]
    trace = TRACES["clean"]
    assert locate(run, Responsible("fixer", None, 1)) == span_id(trace, "f1")
    assert locate(run, Responsible("Fixer", None, 2)) == span_id(trace, "f3")
    assert locate(run, Responsible("coordinator", None, 1)) == span_id(trace, "c1")  # not the fixer's calls inside it
    assert locate(run, Responsible("fixer", "restart", -1)) == span_id(trace, "f2")
    with pytest.raises(Unresolved, match="occurrence 3 .* it has 2"):
        locate(run, Responsible("fixer", None, 3))
    with pytest.raises(Unresolved, match="it has 0"):
        locate(run, Responsible("coordinator", "restart", 1))


@pytest.mark.parametrize("responsible, why", [
    ({"agent": "fixer", "occurrence": 0}, "occurrence"),
    ({"agent": "fixer", "occurrence": True}, "occurrence"),
    ({"tool": "restart"}, "responsible.agent"),
    ({"agent": "fixer", "tool": 3}, "responsible.tool"),
    ("fixer", "must be an object"),
])
def test_a_malformed_responsible_entry_names_the_scenario(tmp_path, responsible, why):
    (tmp_path / "labels.json").write_text(json.dumps({"scenarios": {"s1": {"expected": [], "responsible": responsible}}}))
    with pytest.raises(LoadError, match=f"scenario 's1'.*{why}"):
        scenario_labels(tmp_path)


def test_eval_prints_attribution_accuracy_beside_the_modes(corpus, capsys):
    assert main(["eval", str(corpus), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # a label that locates no step is left out of attribution only: its modes are still scored
    assert out["scored_runs"] == 4 and any("ghost.json" in s for s in out["input"]["skipped"])
    attribution = out["attribution"]
    assert attribution["runs"] == 2 and attribution["coverage"]["hits"] == 2
    # one trace, two labels on different agents and steps: one attribution is right on exactly one of them
    assert attribution["attribution"]["agent"]["hits"] == 1 and attribution["attribution"]["step"]["hits"] == 1
    assert attribution["baselines"]["most active agent"]["agent"]["hits"] == 1  # the fixer took 4 of 6 steps
    assert attribution["baselines"]["first agent step"]["step"]["hits"] == 0  # the coordinator's first call
    assert main(["eval", str(corpus)]) == 0
    table = capsys.readouterr().out
    assert "FM-3.1" in table and "attribution on 2 runs" in table


def test_agent_names_fold_case_and_separators_and_steps_match_as_the_label_names_them():
    assert agent_key("Code Reviewer") == agent_key("code_reviewer") == agent_key("code-reviewer") == "codereviewer"
    assert not same_agent("coder", "code_reviewer") and not same_agent(None, "coder")
    case = AttributionCase("Code Reviewer", "s2", ("planner", "code_reviewer"), "code-reviewer", "s2", ("s1", "s2"))
    result = score_attribution([case])
    assert result["attribution"]["agent"]["hits"] == result["attribution"]["step"]["hits"] == 1
    assert result["baselines"]["first agent step"]["step"]["hits"] == 0  # "s1", the planner's
    assert score_attribution([AttributionCase("a", 1, (None, "a"), None, None)])["baselines"]["first agent step"]["step"]["hits"] == 1
