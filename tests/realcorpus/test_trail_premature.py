"""FM-3.1 on the TRAIL development runs: found only where the run gave up.

People labelled "a final answer given prematurely or a give-up". What the spans can show of that is
a run that stopped at an error it met (``detectors/premature.py``); what they cannot is whether an
answer given without the planned research was made up (the same spans, a manager answering in its
first steps without calling any tool or agent, are labelled as derailment or not at all on twice as
many runs): that is left to the judge. These tests hold the rule to the runs' own spans.
"""

from __future__ import annotations

from mast_otel.processors.config import DetectionConfig
from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.detectors.context import RunContext
from mast_otel.processors.detectors.premature import went_on_in_words
from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.model import LLM, TOOL, Run
from mast_otel.wire.claims import claim_in
from tests.content_off import without_content
from tests.realcorpus.trail import LABELLED, TRAIL, findings_of, ids, modes_found, require_trail, runs_of

PREMATURE = "FM-3.1"


def test_no_give_up_is_found_on_a_run_not_labelled_with_one():
    require_trail()
    false = {e["id"][:12]: modes_found(e["id"])[PREMATURE] for e in LABELLED
             if PREMATURE in modes_found(e["id"]) and PREMATURE not in e["modes"]}
    assert not false, false


def _went_on_after_last_error(run: Run) -> str | None:
    """How the run went on after its last failed tool call, read from its spans, else ``None``:
    an agent made a second model call after it, or the run's recorded answer answers."""
    failed = [s for s in run.steps if s.role is TOOL and s.error]
    if not failed:
        return None
    last = failed[-1]
    calls: dict[str | None, int] = {}
    for step in run.steps:
        if step.role is LLM and step.start_ns > last.start_ns:
            agent = run.agent_of(step)
            key = agent.agent_name if agent is not None else None
            calls[key] = calls.get(key, 0) + 1
            if calls[key] > 1:
                return f"agent {key!r} made {calls[key]} model calls after the error"
    answer = run.hints.final_answer
    if answer and claim_in(answer) is None:
        return f"the run answered {answer[:40]!r}"
    return None


def test_no_stop_is_found_where_the_run_went_on_after_the_error():
    """A later step of the same agent, more code, a manager that went on, or an answer to the task."""
    require_trail()
    wrong = {}
    for entry in LABELLED:
        if not any(f.mode == PREMATURE and "right after" in f.explanation for f in findings_of(entry["id"])):
            continue
        for run in runs_of(entry["id"]):
            how = _went_on_after_last_error(run)
            if how:
                wrong[entry["id"][:12]] = how
    assert not wrong, wrong


def _why_the_spans_show_no_stop(run: Run, found: dict[str, list[str]]) -> str | None:
    """Why a labelled give-up is no stop the spans show, else ``None``."""
    if not [s for s in run.steps if s.role is TOOL] and len(run.agent_spans) == 1:
        return "answered without calling any tool or agent: whether it needed to is content (judge)"
    if "FM-1.5" in found:
        return "an agent used up its step budget: FM-1.5, found as such"
    if _went_on_after_last_error(run) or not [s for s in run.steps if s.role is TOOL and s.error]:
        return "the run went on, or met no error: what its answer skipped is content (judge)"
    return None


def test_every_labelled_give_up_the_rules_leave_is_one_the_spans_cannot_show():
    require_trail()
    labelled = [e for e in LABELLED if PREMATURE in e["modes"]]
    assert labelled, "trail-dev has no labelled FM-3.1"
    unexplained = []
    for entry in labelled:
        found = modes_found(entry["id"])
        if PREMATURE in found:
            continue
        if not all(_why_the_spans_show_no_stop(run, found) for run in runs_of(entry["id"]) if run.steps):
            unexplained.append(entry)
    assert not unexplained, ids(unexplained)


def test_with_content_taken_out_a_stop_is_reported_only_where_the_answer_decided_it():
    """Content off, the runs keep their exceptions (span status), so every stop with content is one
    without; the only runs that differ are those whose one answer after the error read, with
    content, as an answer to the task (docs/detection.md says why the spans cannot tell)."""
    require_trail()
    differ = {}
    for entry in LABELLED:
        on = {f.mode for f in findings_of(entry["id"])}
        for run in load_runs([TRAIL / entry["file"]]):
            if not run.steps:
                continue
            off = {f.mode for f in rule_findings(without_content(run))}
            if (PREMATURE in on) != (PREMATURE in off):
                assert PREMATURE in off, f"{entry['id'][:12]}: content off lost a stop"
                [content] = [r for r in runs_of(entry["id"]) if r.trace_id == run.trace_id]  # hints derived
                differ[entry["id"][:12]] = went_on_in_words(RunContext(content, DetectionConfig()))
    assert all(differ.values()), differ
