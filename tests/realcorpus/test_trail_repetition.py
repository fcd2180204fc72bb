"""FM-1.3 on the TRAIL development runs: repetition as people saw it on real browsing and code agents.

People labelled 21 runs repetitive. The rule tier must find at least 15 of them. The rest show no
repetition the spans can prove: some label a first search that failed followed by a reworded one
that found results, or a search repeated after new pages were read that brought back new
addresses; the SWE-bench code agents' other retries differ in code, and whether they failed is
recorded only on the framework's step spans, which are not read.

Where people labelled no repetition, a finding must rest on what the run's own spans show learned
nothing: tool calls that all failed the same way (the same error type, arguments the tool refused),
or code actions with no tool call between them, so nothing could have come back in between.
"""

from __future__ import annotations

import pytest

from mast_otel.processors.model import LLM, TOOL, Finding, Run
from tests.realcorpus.trail import LABELLED, findings_of, ids, require_trail, runs_of

MODE = "FM-1.3"
MIN_RECALL = 15
REPETITIVE = [entry for entry in LABELLED if MODE in entry["modes"]]
OTHERS = [entry for entry in LABELLED if MODE not in entry["modes"]]
# Runs labelled otherwise where a repetition the spans prove was found (a refused page_down resent,
# a code action reworded or refused the same way): checked by hand, each meets the criterion below.
MAX_UNLABELLED = 3


def _repeats(label_id: str) -> list[Finding]:
    return [f for f in findings_of(label_id) if f.mode == MODE]


def test_most_runs_people_called_repetitive_are_found():
    require_trail()
    found = [entry["id"][:10] for entry in REPETITIVE if _repeats(entry["id"])]
    missed = [entry["id"][:10] for entry in REPETITIVE if not _repeats(entry["id"])]
    assert len(REPETITIVE) == 21
    assert len(found) >= MIN_RECALL, f"found {len(found)} of {len(REPETITIVE)}; missed {missed}"


def _run_holding(label_id: str, finding: Finding) -> Run:
    return next(run for run in runs_of(label_id) if finding.evidence_span_ids[0] in run.spans_by_id)


def _learned_nothing(run: Run, finding: Finding) -> str | None:
    """Why the evidence fails the criterion, or ``None`` when it meets it."""
    spans = [run.spans_by_id[sid] for sid in finding.evidence_span_ids]
    if all(s.role is TOOL for s in spans):
        if not all(s.error for s in spans):
            return "a call of the evidence succeeded"
        if len({s.error_type for s in spans}) != 1:
            return "the calls failed in different ways"
        if not all("argument" in (s.status_message or "") for s in spans):
            return "a failure does not say its arguments were refused"
        return None
    if all(s.role is LLM for s in spans):
        first, last = spans[0].start_ns, spans[-1].start_ns
        between = [s for s in run.tool_calls if first <= s.start_ns <= last]
        return f"tool calls ran between the code actions: {[s.tool_name for s in between]}" if between else None
    return "evidence mixes tool calls and model calls"


@pytest.mark.parametrize("label", OTHERS, ids=ids(OTHERS))
def test_a_repetition_found_where_none_was_labelled_learned_nothing(label):
    require_trail()
    for finding in _repeats(label["id"]):
        why = _learned_nothing(_run_holding(label["id"], finding), finding)
        assert why is None, f"{finding.explanation}: {why}"


def test_few_runs_labelled_otherwise_show_a_repetition():
    require_trail()
    unlabelled = [entry["id"][:10] for entry in OTHERS if _repeats(entry["id"])]
    assert len(unlabelled) <= MAX_UNLABELLED, unlabelled
