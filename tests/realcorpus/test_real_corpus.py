"""Diagnosis of real model output through real instrumentations (``../shared/real-corpus``).

124 runs replayed from agent frameworks' own test cassettes (CrewAI, pydantic-ai, magentic:
the models' recorded responses) through two instrumentations each, with labels made by reading
each run. The data is read where it lies (``../shared/real-corpus`` beside the repository, or
the folder ``MAST_TESTS_REAL_CORPUS`` names), never copied into the repository: the tests skip
when it is absent, except in CI (``CI=true``), where it must be present.

Per run: every model call and tool call is read (as the labels count them), every labelled
mode is found, and nothing is found beyond the labelled and debatable modes (on a clean run,
nothing at all). A labelled mode that the spans cannot show (the instrumentation left out what
would show it) is an expected failure that must keep failing, with the reason; the check for
false alarms has no exception.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

import pytest

from mast_otel.processors.conversations.diagnose import diagnose_session
from mast_otel.processors.conversations.ids import session_id_of
from mast_otel.processors.conversations.model import Turn
from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.model import Run
from tests.tools import IN_CI

# Beside the repository; a checkout elsewhere (a git worktree) names it in MAST_TESTS_REAL_CORPUS.
CORPUS = Path(os.environ.get("MAST_TESTS_REAL_CORPUS") or Path(__file__).resolve().parents[2] / ".." / "shared" / "real-corpus")
LABELS = CORPUS / "labels.json"

# Labelled modes the spans cannot show, by run: what the instrumentation leaves out.
_SPLIT_TRACES = ("OpenLLMetry writes each model call of a CrewAI agent run outside a crew as a trace of its own, "
                 "with no agent span and no tool span: no run holds what shows the mode")
_SAY_HI = ("CrewAI outside a crew: each ReAct attempt is a trace of its own (a model call and nothing else) and the "
           "unknown action is only text in the completion")
UNDERIVABLE: dict[str, dict[str, str]] = {
    "crewai-openinference--test_task_emits_failed_event_on_execution_error": {"FM-1.3": _SAY_HI},
    "crewai-openllmetry--test_guardrail_reached_attempt_limit": {"FM-1.1": _SPLIT_TRACES},
    "crewai-openllmetry--test_native_tool_calling_error_handling": {"FM-3.1": _SPLIT_TRACES},
}


def _labels() -> list[dict]:
    return json.loads(LABELS.read_text()) if LABELS.is_file() else []


LABELLED = _labels()


@lru_cache(maxsize=None)
def _read(label_id: str) -> tuple[Run, ...]:
    """The runs of one labelled file, diagnosed (hints derived, so the steps are as the rules see them)."""
    label = next(entry for entry in LABELLED if entry["id"] == label_id)
    path = CORPUS / label["file"]
    assert path.is_file(), f"{path} is listed in labels.json but missing"
    runs = tuple(load_runs([path]))
    assert runs, f"{label_id}: no run read"
    return runs


@lru_cache(maxsize=None)
def _found(label_id: str) -> dict[str, list[str]]:
    """Mode -> explanations, over every run of the file (a test may kick off several)."""
    found: dict[str, list[str]] = {}
    for run in _read(label_id):
        for finding in rule_findings(run):
            found.setdefault(finding.mode, []).append(finding.explanation)
    return found


def _ids(entries: list[dict]) -> list[str]:
    return [entry["id"] for entry in entries]


def test_the_corpus_is_here():
    if not LABELS.is_file():
        message = f"{CORPUS} is not on this machine"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    assert len(LABELLED) == 124
    assert any(entry["file"].endswith(".gz") for entry in LABELLED)  # one file is read gzipped, as it lies
    assert set(UNDERIVABLE) <= set(_ids(LABELLED)), "an expected failure names a run the corpus no longer has"


@pytest.mark.parametrize("label", LABELLED, ids=_ids(LABELLED))
def test_every_model_and_tool_call_is_read(label):
    runs = _read(label["id"])
    expected = label["expected"]
    _found(label["id"])  # diagnosed: answer tools and wrapper spans have left the steps
    models = sum(len(run.llm_calls) for run in runs)
    tools = sum(len(run.tool_calls) for run in runs)
    assert (models, tools) == (expected["model_call_spans"], expected["tool_call_spans"]), label["what_happens"]


def _mode_cases() -> list:
    cases = []
    for label in LABELLED:
        for mode in label["modes"]:
            reason = UNDERIVABLE.get(label["id"], {}).get(mode)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            cases.append(pytest.param(label, mode, marks=marks, id=f"{label['id']}:{mode}"))
    return cases


@pytest.mark.parametrize("label, mode", _mode_cases())
def test_every_labelled_mode_is_found(label, mode):
    assert mode in _found(label["id"]), f"{mode} missed: {label['what_happens']}"


@pytest.mark.parametrize("label", LABELLED, ids=_ids(LABELLED))
def test_nothing_is_found_beyond_the_labels(label):
    allowed = set(label["modes"]) | set(label.get("debatable_modes", ()))
    found = _found(label["id"])
    extra = {mode: found[mode] for mode in found if mode not in allowed}
    assert not extra, f"false alarm on a run labelled {sorted(label['modes']) or 'clean'}: {extra}"


@pytest.mark.parametrize("label", LABELLED, ids=_ids(LABELLED))
def test_runs_sharing_a_session_raise_nothing_beyond_the_labels_when_diagnosed_together(label):
    """A file's runs that carry one session id (a test that ran the agent more than once) are turns
    of one session: the cross-turn detection must not raise a mode the file's label does not have."""
    _found(label["id"])  # hints derived, as the service diagnoses turns
    sessions: dict[str, list[Run]] = {}
    for run in _read(label["id"]):
        if (session_id := session_id_of(run)) is not None:
            sessions.setdefault(session_id, []).append(run)
    allowed = set(label["modes"]) | set(label.get("debatable_modes", ()))
    for session_id, runs in sessions.items():
        runs.sort(key=lambda run: min((s.start_ns for s in run.spans), default=0))
        findings = diagnose_session([Turn(session_id, run) for run in runs])
        extra = {f.mode: f.explanation for f in findings if f.mode not in allowed}
        assert not extra, f"cross-turn false alarm over {len(runs)} turns of {label['what_happens']}: {extra}"
