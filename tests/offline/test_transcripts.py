from __future__ import annotations

import json
from pathlib import Path

import pytest

from mast_otel.processors.detectors import diagnose
from mast_otel.processors.ingest.transcripts import StepListError, is_steplist, runs_from_steplist
from mast_otel.processors.model import Role

FIXTURE = Path(__file__).parent.parent / "fixtures" / "runs" / "sre_steplist.json"


def test_detects_step_lists_and_nothing_else() -> None:
    assert is_steplist({"steps": [{"agent": "a", "kind": "message", "content": "x"}]})
    assert is_steplist([{"steps": [{"kind": "message"}]}])
    assert not is_steplist({"resourceSpans": []}) and not is_steplist([]) and not is_steplist({"steps": [1]})


def test_spans_pair_calls_with_results_under_agent_spans_with_stable_ids() -> None:
    data = json.loads(FIXTURE.read_text())
    runs = runs_from_steplist(data)
    again = runs_from_steplist(data)
    assert [s.span_id for s in runs[0].spans] == [s.span_id for s in again[0].spans]
    loop = runs[0]
    assert loop.root is not None and loop.root.agent_name == "sre" and loop.hints.max_steps == 3
    tools = loop.tool_calls
    assert [t.tool_name for t in tools] == ["get_pods"] * 3
    assert len({t.args_hash for t in tools}) == 1 and len({t.result_hash for t in tools}) == 1
    assert all(t.tool_result == "checkout-1 CrashLoopBackOff" and t.parent_span_id == loop.root.span_id for t in tools)
    assert all(t.end_ns > t.start_ns for t in tools)
    # the user turn is no model call; each tool call and the last message are
    assert len(loop.llm_calls) == 4 and loop.llm_calls[0].requested_tools == ("get_pods",)
    assert loop.labels == {"modes": {"FM-1.3": True, "FM-1.5": True, "FM-3.1": False}, "outcome": "failure",
                           "group": "sre/model-a", "order": "sre-loop"}
    assert loop.hints.outcome == "failure" and len(loop.trace_id) == 32 and len(tools[0].span_id) == 16


def test_multi_agent_record_mast_annotation_and_generic_error_signs() -> None:
    team = runs_from_steplist(json.loads(FIXTURE.read_text()))[3]
    agents = {s.agent_name: s for s in team.agent_spans}
    assert set(agents) == {"team", "planner", "coder"}
    assert agents["coder"].hints.allowed_tools == ("python",)
    shell = team.tool_calls[0]
    assert team.agent_of(shell) is agents["coder"]
    assert shell.error and shell.error_type == "PermissionError"
    assert team.labels["modes"]["FM-1.2"] is True and team.labels["modes"]["FM-1.3"] is False
    assert team.labels["outcome"] == "failure"
    found = {f.mode: f for f in diagnose(team)}
    assert found["FM-1.2"].evidence_span_ids == (shell.span_id, agents["coder"].span_id)


def test_unpaired_results_and_explicit_step_fields() -> None:
    run = runs_from_steplist({"steps": [
        {"agent": "a", "kind": "tool_result", "tool": "probe", "tool_kind": "verify", "content": "fail",
         "verification_passed": False, "error": False},
        {"agent": "a", "kind": "message", "content": "exit code: 0 is fine", "requested_tools": ["x"]},
    ], "metadata": {"final_answer": "done"}})[0]
    probe = run.tool_calls[0]
    assert (probe.tool_name, probe.tool_kind, probe.verification_passed, probe.error) == ("probe", "verify", False, False)
    assert run.hints.termination_reason == "final_answer" and run.labels == {}
    assert {f.mode for f in diagnose(run)} >= {"FM-3.3"}


@pytest.mark.parametrize("bad, message", [
    ({"steps": [{"kind": "dance"}]}, "unknown kind 'dance'"),
    ({"steps": ["x"]}, "step 0: expected an object"),
    ([{"steps": []}, {"nope": 1}], "record 1"),
    ({"steps": [], "metadata": {"mast_annotation": {"9.9": 1}}}, "unknown failure mode"),
])
def test_bad_records_are_named(bad, message) -> None:
    with pytest.raises(StepListError, match=message):
        runs_from_steplist(bad)


def test_record_without_steps_yields_an_empty_run() -> None:
    run = runs_from_steplist({"steps": []})[0]
    assert [s.role for s in run.spans] == [Role.AGENT] and diagnose(run) == []
