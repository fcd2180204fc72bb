"""FM-3.1 only where the run gave up: work after an error is the run going on, not a stop.

Small runs for each rule of ``detectors/premature.py``; the recorded corpora, with their content and
with it taken out (``tests/content_off.py``), for the verdicts that must not move with capture.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest

from mast_otel.processors.attribution import build_diagnosis
from mast_otel.processors.config import DetectionConfig
from mast_otel.processors.detectors import diagnose, rule_findings
from mast_otel.processors.detectors.context import RunContext
from mast_otel.processors.detectors.premature import went_on_in_words
from mast_otel.processors.hints import derive_hints
from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.model import Role, Run
from tests.content_off import without_content
from tests.frameworks.corpus_files import Recording, recordings
from tests.teams.corpus_files import recordings as team_recordings

PREMATURE = "FM-3.1"


def premature(run: Run) -> list:
    return [f for f in diagnose(run) if f.mode == PREMATURE]


# --- the run went on after the error ------------------------------------------------------------
def test_a_code_agent_whose_next_step_ran_more_code_before_answering_went_on(rb) -> None:
    a = rb.agent("CodeAgent", max_steps=12)
    rb.llm(a)
    rb.tool(a, "inspect_file_as_text", {"f": "x.pdb"}, error=True)
    rb.llm(a, output_text="Thought: the file cannot be read that way; I parse it in Python instead.")
    rb.llm(a, output_text="final_answer(1.46)")
    assert not premature(rb.run())


def test_an_answer_right_after_the_error_that_answers_the_task_went_on(rb) -> None:
    """With content: the one step after the error answered the task without a word of failure."""
    a = rb.agent("CodeAgent", max_steps=12)
    rb.tool(a, "inspect_file_as_text", {"f": "x.pdb"}, error=True)
    rb.llm(a, output_text="final_answer(1.46)")
    assert not premature(rb.run())


def test_a_manager_that_thought_again_after_its_workers_error_went_on(rb) -> None:
    manager = rb.agent("manager", max_steps=12)
    rb.llm(manager)
    worker = rb.agent("search_agent", parent=manager, max_steps=20)
    rb.tool(worker, "page_down", {}, error=True)
    rb.llm(worker)
    rb.llm(manager)  # it read the report and planned again
    rb.llm(manager)
    assert not premature(rb.run())


def test_a_manager_that_sent_work_out_again_after_its_workers_error_went_on(rb) -> None:
    manager = rb.agent("manager")
    worker = rb.agent("operator", parent=manager)
    rb.tool(worker, "restart", {"d": "checkout"}, error=True)
    rb.llm(worker)
    rb.tool(manager, "transfer_to_verifier", {}, "ok", kind="handoff")
    rb.llm(manager)
    assert not premature(rb.run())


def test_a_success_claim_over_the_error_is_no_give_up(rb) -> None:
    """Claiming success over a failure is FM-3.3 or FM-2.4; the run did not stop for the error."""
    a = rb.agent(claimed_success=True)
    rb.tool(a, "restart", {"d": "checkout"}, error=True)
    rb.llm(a, output_text="Resolved: checkout is healthy.")
    assert not premature(rb.run())


# --- the run gave up at the error ---------------------------------------------------------------
def test_a_give_up_right_after_the_error_names_the_means_left(rb) -> None:
    a = rb.agent("sre", max_steps=8)
    rb.tool(a, "get_pods", {}, "pods")
    bad = rb.tool(a, "restart", {"d": "checkout"}, error=True)
    rb.llm(a, output_text="I could not restart checkout: the restart was refused.")
    [f] = premature(rb.run())
    assert f.evidence_span_ids == (bad.span_id, a.span_id)
    assert "5 of its 8 steps left" in f.explanation and "'restart' not tried again" in f.explanation


def test_a_worker_handing_its_failure_back_and_the_coordinator_giving_up_is_the_teams_stop(rb) -> None:
    """Each turn of an agent is a span of its own; its closing call after the handback is no new work."""
    coordinator = rb.agent("coordinator")
    rb.tool(coordinator, "transfer_to_operator", {}, "ok", kind="handoff")
    operator = rb.agent("operator", parent=coordinator)
    rb.tool(operator, "restart", {"d": "checkout"}, error=True)
    turn = rb.agent("operator", parent=coordinator)
    rb.llm(turn, output_text="The restart failed: refused.")
    rb.tool(turn, "transfer_to_coordinator", {}, "ok", kind="handoff")
    rb.llm(turn, output_text="Handed off to coordinator.")
    rb.llm(rb.agent("coordinator", parent=coordinator), output_text="I could not fix checkout.")
    assert "right after an error from tool 'restart'" in premature(rb.run())[0].explanation


def test_an_honest_report_after_retrying_with_the_budget_spent_is_no_premature_stop(rb) -> None:
    """The agent retried the failing tool and used most of its budget: no means left untried."""
    a = rb.agent("sre", max_steps=4)
    for _ in range(3):
        rb.llm(a)
        rb.tool(a, "restart", {"d": "checkout"}, error=True)
    rb.llm(a, output_text="I could not restart checkout: refused three times by the webhook.")
    assert not premature(rb.run())
    a.hints.max_steps = 20  # the same report with most of a larger budget unused
    assert "16 of its 20 steps left" in premature(rb.run())[0].explanation


def test_content_off_the_same_stop_is_found_from_the_spans_alone(rb) -> None:
    a = rb.agent("sre")
    rb.tool(a, "restart", {"d": "checkout"}, error=True)
    rb.llm(a, output_text="[REDACTED]")
    assert premature(rb.run())


# --- giving up without an error -----------------------------------------------------------------
def test_a_worker_that_gave_up_early_while_its_manager_answered_is_not_the_runs_give_up(rb) -> None:
    manager = rb.agent("manager", max_steps=12, final_answer="The answer is 42.")
    worker = rb.agent("search_agent", parent=manager, max_steps=20, final_answer="I was unable to find it.")
    rb.llm(worker)
    rb.llm(manager, output_text="The answer is 42.")
    assert not premature(rb.run())
    manager.hints.final_answer = "I could not find the answer."
    rb.spans[-1].output_text = "I could not find the answer."
    found = premature(rb.run())
    assert [f.explanation for f in found if "search_agent" in f.explanation]  # the first agent that gave up


def test_a_harness_step_outside_the_agent_is_no_agent_giving_up(rb) -> None:
    """A harness that formats the agent's answer (a model call outside every agent span) does not speak for it."""
    a = rb.agent("CodeAgent", max_steps=12, final_answer="Please find the endnote on page 11.")
    rb.llm(a)
    harness = rb.llm(None, output_text="FINAL ANSWER: Unable to determine")
    harness.parent_span_id = None
    assert not premature(rb.run())


# --- the recorded corpora, with content and without -------------------------------------------------
CONTENT = [r for r in recordings() + team_recordings() if r.variant == "content"]


def _id(recording: Recording) -> str:
    return f"{recording.path.parents[1 if recording.variant == 'no-content' else 0].parent.parent.name}/{recording.id}"


def _verdicts(recording: Recording) -> tuple[bool, bool, bool, bool]:
    return _verdicts_of(recording.path)


@lru_cache(maxsize=None)
def _verdicts_of(path: Path) -> tuple[bool, bool, bool, bool]:
    """(FM-3.1 with content, without, the content run's last word goes on, a failed call left without content)."""
    [on] = [r for r in load_runs([path]) if r.steps]
    [off] = [without_content(r) for r in load_runs([path]) if r.steps]
    found_on = PREMATURE in {f.mode for f in rule_findings(on)}
    found_off = PREMATURE in {f.mode for f in rule_findings(off)}
    derive_hints(on)
    went_on = went_on_in_words(RunContext(on, DetectionConfig()))
    error_left = any(s.error or s.verification_passed is False for s in off.spans if s.role is Role.TOOL)
    return found_on, found_off, went_on, error_left


@pytest.mark.parametrize("recording", CONTENT, ids=_id)
def test_content_on_and_off_agree_where_the_spans_allow(recording) -> None:
    """Two differences only, both where the spans cannot tell: an error known only from the value the
    tool returned (content off: no error at all), and a last word that answers or claims success
    after the error (content off: the stop stands on the spans alone)."""
    on, off, went_on, error_left = _verdicts(recording)
    if on and not off:
        assert not error_left, "content off lost a stop its spans still show"
    if off and not on:
        assert went_on, "content on dropped a stop without its last word going on"


def test_content_off_finds_the_stops_the_spans_show() -> None:
    """An error the spans carry (a tool that raised) is found with content off as with it on."""
    raised = [r for r in CONTENT if r.scenario.name == "tool_exception"]
    assert raised and all(_verdicts(r)[1] for r in raised if _verdicts(r)[3]), \
        [r.id for r in raised if _verdicts(r)[3] and not _verdicts(r)[1]]


NEAR_MISSES = [r for r in recordings() + team_recordings() if r.scenario.near_miss_of or r.scenario.name in ("recheck", "retry_ok")]


@pytest.mark.parametrize("recording", NEAR_MISSES, ids=_id)
def test_a_deliberate_recheck_or_retry_is_no_give_up_in_either_variant(recording) -> None:
    [run] = [r for r in load_runs([recording.path]) if r.steps]
    assert PREMATURE not in {f.mode for f in rule_findings(run)}
    [stripped] = [without_content(r) for r in load_runs([recording.path]) if r.steps]
    assert PREMATURE not in {f.mode for f in rule_findings(stripped)}


def _shape(recording: Recording) -> list[tuple[str, str | None, bool]]:
    [run] = [r for r in load_runs([recording.path]) if r.steps]
    derive_hints(run)
    return [(s.role.value, s.tool_name, s.error) for s in run.steps]


@pytest.mark.parametrize("framework", ["openai-agents-handoffs", "smolagents", "smolagents-code"])
def test_a_give_up_whose_error_was_only_in_content_is_found_with_content_and_cannot_be_without(framework) -> None:
    """Content on: the coordinator's give-up after the operator's refused restart is FM-3.1, blamed on the
    coordinator. Content off: the refusal was a returned value, so the run's spans are those of the run
    where the restart worked and nobody checked it: no rule can tell the two apart (docs/detection.md)."""
    by = {(r.variant, r.scenario.name): r for r in team_recordings() if r.framework == framework}
    content = by[("content", "worker_failed_gave_up")]
    [run] = [r for r in load_runs([content.path]) if r.steps]
    findings = rule_findings(run)
    assert PREMATURE in {f.mode for f in findings}
    who = build_diagnosis(run, findings).attribution
    assert who is not None and who.agent == "coordinator"
    assert _shape(by[("no-content", "worker_failed_gave_up")]) == _shape(by[("no-content", "unverified")])
