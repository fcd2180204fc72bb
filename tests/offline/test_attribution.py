"""Failure attribution (who and where) from findings, Who&When logs, and its scoring in ``eval``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mast_otel.processors.attribution import attribute
from mast_otel.processors.cli import main
from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.ingest.transcripts import run_from_record
from mast_otel.processors.ingest.who_and_when import handoff_target, run_from_who_and_when, speaker
from mast_otel.processors.model import Finding
from mast_otel.processors.offline.attribution_scoring import first_agent_step, most_active_agent

WHO_AND_WHEN = Path(__file__).resolve().parents[3] / "shared" / "eval" / "who-and-when" / "Algorithm-Generated"
HAND_CRAFTED = Path(__file__).resolve().parents[1] / "fixtures" / "who-and-when" / "hand-crafted"  # synthetic, Magentic-One shape


def team_run(success: bool | None = False):
    record = {"steps": [
        {"agent": "user", "kind": "message", "content": "Count the rows."},
        {"agent": "planner", "kind": "message", "content": "The coder will count them."},
        {"agent": "coder", "kind": "tool_call", "tool": "python", "arguments": "len(rows)"},
        {"agent": "coder", "kind": "tool_result", "content": "NameError: name 'rows' is not defined"},
        {"agent": "checker", "kind": "message", "content": "Looks right to me."},
    ], "metadata": {"success": success}}
    return run_from_record(record)


def finding(run, mode, step_index, source="rules"):
    span = next(s for s in run.steps if s.step_index == step_index and s.tool_name is None) if step_index is not None else None
    return Finding(mode, 0.8, "x", (span.span_id,) if span else (), source=source)


def test_the_earliest_fatal_finding_names_agent_and_step():
    run = team_run()
    later = finding(run, "FM-3.1", 4)  # fatal, at the checker
    earlier = finding(run, "FM-1.5", 2)  # fatal, at the coder's call
    recoverable = finding(run, "FM-1.3", 1)  # earlier still, but not fatal
    who = attribute(run, [later, recoverable, earlier])
    assert (who.agent, who.mode, who.step_index, who.source) == ("coder", "FM-1.5", 2, "rules")
    assert who.step_span_id == earlier.evidence_span_ids[0]


def test_a_failed_run_without_fatal_findings_uses_its_earliest_finding_and_a_success_gets_none():
    run = team_run()
    assert attribute(run, [finding(run, "FM-1.3", 4), finding(run, "FM-2.6", 1)]).agent == "planner"
    succeeded = team_run(success=True)
    assert attribute(succeeded, [finding(succeeded, "FM-1.3", 1)]) is None
    assert attribute(run, []) is None


def test_a_claim_without_or_against_a_check_is_the_deciding_agent_s_not_the_worker_s():
    """FM-3.2/FM-3.3 evidence sits on the unchecked change or the failed check; the decision is the final answer."""
    run = team_run(success=None)
    who = attribute(run, [finding(run, "FM-3.2", 2)])  # anchored on the coder's change
    assert (who.agent, who.step_index, who.mode) == ("checker", 4, "FM-3.2")
    assert attribute(team_run(success=True), [finding(run, "FM-1.3", 2)]) is None  # recoverable only, succeeded


def test_unrated_findings_come_before_earlier_recoverable_ones():
    run = team_run(success=None)
    who = attribute(run, [finding(run, "FM-1.3", 1), finding(run, "FM-2.4", 2)])
    assert (who.agent, who.mode) == ("coder", "FM-2.4")


def test_rule_findings_win_over_judge_findings_and_the_judge_stands_in_alone():
    run = team_run()
    judge, rules = finding(run, "FM-2.3", 1, source="judge"), finding(run, "FM-3.1", 4)
    assert attribute(run, [judge, rules]).source == "rules"
    assert (attribute(run, [judge]).source, attribute(run, [judge]).agent) == ("judge", "planner")


LOG = {
    "question": "How many rows?", "question_ID": "q1", "is_correct": False,
    "mistake_agent": "Coder_Expert", "mistake_step": "1", "mistake_reason": "wrong variable",
    "history": [
        {"content": "How many rows?", "role": "user"},
        {"content": "```python\nprint(len(rows))\n```", "role": "assistant", "name": "Coder_Expert"},
        {"content": "exitcode: 1 (execution failed)\nCode output: NameError: name 'rows' is not defined",
         "role": "user", "name": "Computer_terminal"},
        {"content": "The answer is 3.", "role": "user", "name": "Checker_Expert"},
        {"content": "TERMINATE", "role": "user", "name": "Checker_Expert"},
    ],
}


def test_who_and_when_logs_become_runs_whose_executor_reports_belong_to_the_code_they_ran():
    run = run_from_who_and_when(LOG)
    assert run.labels["attribution"] == {"agent": "Coder_Expert", "step": 1} and run.hints.outcome == "failure"
    assert run.labels["history"] == [None, "Coder_Expert", "Computer_terminal", "Checker_Expert", "Checker_Expert"]
    (tool,) = run.tool_calls
    assert tool.error and tool.step_index == 1 and run.agent_of(tool).agent_name == "Coder_Expert"
    assert "```python\nprint(len(rows))\n```" == tool.tool_args  # code keeps its newlines
    assert [s.step_index for s in run.llm_calls] == [1, 3, 4]  # the human question is no model call


def test_magentic_one_roles_name_the_bare_agent_and_a_human():
    assert speaker({"role": "Orchestrator (thought)", "content": "x"}) == "Orchestrator"
    assert speaker({"role": "Orchestrator (-> WebSurfer)"}) == "Orchestrator" and speaker({"role": "WebSurfer"}) == "WebSurfer"
    assert speaker({"role": "human"}) is None and speaker({"role": "user"}) is None
    assert speaker({"role": "user", "name": "Coder_Expert"}) == "Coder_Expert" and speaker({"role": "assistant"}) == "assistant"
    assert handoff_target({"role": "Orchestrator (-> WebSurfer)"}) == "WebSurfer"
    assert handoff_target({"role": "Orchestrator (thought)"}) is None
    assert handoff_target({"role": "user (-> WebSurfer)", "name": "Planner"}) is None  # a named entry's role is the chat API's


def test_hand_crafted_logs_become_runs_of_bare_agents_with_handoffs():
    run = run_from_who_and_when(json.loads((HAND_CRAFTED / "2.json").read_text()))
    assert run.labels["attribution"] == {"agent": "WebSurfer", "step": 3} and run.hints.outcome == "failure"
    assert run.labels["history"] == [None, "Orchestrator", "Orchestrator", "WebSurfer", "Orchestrator", "Assistant",
                                     "Orchestrator"]
    assert sorted(s.agent_name for s in run.agent_spans if s is not run.root) == ["Assistant", "Orchestrator", "WebSurfer"]
    assert [s.step_index for s in run.llm_calls] == [1, 2, 3, 4, 5, 6]  # the human question is no model call
    handoffs = run.tool_calls
    assert [(t.tool_name, t.tool_kind, t.step_index, run.agent_of(t).agent_name) for t in handoffs] == [
        ("handoff", "handoff", 2, "Orchestrator"), ("handoff", "handoff", 4, "Orchestrator")]
    assert [json.loads(t.tool_args)["to"] for t in handoffs] == ["WebSurfer", "Assistant"]
    assert [t.tool_result for t in handoffs] == ["WebSurfer", "Assistant"]


def test_a_handoff_is_answered_at_once_so_a_later_executor_report_stays_its_own():
    log = {"question": "q", "mistake_agent": "Coder", "mistake_step": "2", "history": [
        {"role": "human", "content": "Run the script."},
        {"role": "Orchestrator (-> ComputerTerminal)", "content": "Run script.py."},
        {"role": "ComputerTerminal", "content": "exitcode: 1 (execution failed)\nTraceback (most recent call last):"},
    ]}
    handoff, report = run_from_who_and_when(log).tool_calls
    assert (handoff.tool_name, handoff.tool_result, handoff.error) == ("handoff", "ComputerTerminal", False)
    assert (report.tool_name, report.step_index, report.error) == ("code_execution", 2, True)


def test_eval_scores_a_folder_of_hand_crafted_logs_with_bare_agent_baselines(capsys):
    assert main(["eval", str(HAND_CRAFTED), "--format", "json"]) == 0  # a folder without labels.json: its logs
    out = json.loads(capsys.readouterr().out)["attribution"]
    assert out["runs"] == 2
    assert out["baselines"]["most active agent"]["agent"]["hits"] == 1  # the Orchestrator, in the first log only
    assert out["baselines"]["first agent step"]["step"]["hits"] == 0


def test_baselines_by_hand():
    speakers = [None, "a", "b", "b", "a", "c"]
    assert most_active_agent(speakers) == "a"  # tie between a and b: the first to speak
    assert first_agent_step(speakers) == 1 and first_agent_step([None]) is None


# The team stops at the failed execution (LOG's answers after it: the team went on, no premature end).
STOPPED = {**LOG, "history": LOG["history"][:3] + [{"content": "TERMINATE", "role": "user", "name": "Checker_Expert"}]}


def test_eval_scores_attribution_beside_the_baselines(tmp_path, capsys):
    (tmp_path / "1.json").write_text(json.dumps(STOPPED))
    quiet = {**STOPPED, "question_ID": "q2", "history": [STOPPED["history"][0], STOPPED["history"][1], STOPPED["history"][3]]}
    (tmp_path / "2.json").write_text(json.dumps(quiet))
    assert main(["eval", str(tmp_path / "1.json"), str(tmp_path / "2.json"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)["attribution"]
    assert out["runs"] == 2 and out["coverage"]["hits"] == 1  # the failed execution is found in the first only
    assert out["attribution"]["agent"]["hits"] == 1 and out["attribution"]["step"]["hits"] == 1
    assert out["baselines"]["first agent step"]["step"]["hits"] == 2
    assert out["attribution"]["agent"]["ci"][0] < 0.5 < out["attribution"]["agent"]["ci"][1]
    assert main(["analyze", str(tmp_path / "1.json"), "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["runs"][0]
    assert row["attribution"]["agent"] == "Coder_Expert"


@pytest.mark.skipif(not WHO_AND_WHEN.is_dir(), reason="../shared/eval/who-and-when is not on this machine")
def test_the_who_and_when_runs_are_all_read_and_scored(capsys):
    files = sorted(str(p) for p in WHO_AND_WHEN.glob("*.json"))
    assert len(list(load_runs(files))) == len(files) == 126
    assert main(["eval", *files, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)["attribution"]
    assert out["runs"] == 126 and 0 < out["baselines"]["most active agent"]["agent"]["hits"] < 126
