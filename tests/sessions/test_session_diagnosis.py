"""Session-level diagnosis of the session corpus: the turns of each recorded conversation, diagnosed together.

``diagnose_session`` gets each recording's turns in the order they were sent. With content, a
scenario's labelled modes must be found, each on one of the turns its label names (the finding's
turn, and evidence spans on that turn), and nothing else: clean sessions and near misses (a user
who asks again on purpose, a lookup re-run after the data changed) stay quiet. Without content,
no false alarm. The session id is the one the app used (from the manifest), since one
instrumentation here (Agent Framework's local sessions) writes none on its spans.
"""

from __future__ import annotations

import json

import pytest

from mast_otel.processors.conversations.diagnose import diagnose_session
from mast_otel.processors.conversations.model import SessionFinding, Turn
from tests.sessions.corpus_files import CORPUS, recordings, session_of, turn_runs

RECORDINGS = recordings()
LABELS = json.loads((CORPUS / "labels.json").read_text())["sessions"]  # per session: modes and the turns' trace ids


def _diagnosed(recording) -> tuple[list[Turn], list[SessionFinding]]:
    session_id = session_of(recording)["session_id"]
    turns = [Turn(session_id=session_id, run=run) for run in turn_runs(recording)]
    return turns, diagnose_session(turns)


@pytest.mark.parametrize("recording", [r for r in RECORDINGS if r.variant == "content"], ids=lambda r: r.id)
def test_with_content_the_cross_turn_mode_is_found_on_the_labelled_turn_and_nothing_else(recording):
    turns, findings = _diagnosed(recording)
    expected = {e["mode"]: set(e["trace_ids"]) for e in LABELS[recording.id]["session_expected"]}
    found = {f.mode for f in findings}
    assert found <= set(expected), f"false alarm {sorted(found - set(expected))}"
    assert set(expected) <= found, f"missed {sorted(set(expected) - found)}"
    spans = {(t.trace_id, s.span_id) for t in turns for s in t.run.spans}
    for finding in findings:
        assert finding.turn_trace_id in expected[finding.mode], (finding.mode, finding.turn_trace_id)
        assert any(ref.trace_id == finding.turn_trace_id for ref in finding.evidence), \
            f"{finding.mode}: no evidence span on the turn it is about"
        assert all((ref.trace_id, ref.span_id) in spans for ref in finding.evidence), "evidence outside the session"


@pytest.mark.parametrize("recording", [r for r in RECORDINGS if r.variant == "no-content"], ids=lambda r: r.id)
def test_without_content_there_is_no_false_alarm(recording):
    _, findings = _diagnosed(recording)
    allowed = {e["mode"] for e in LABELS[recording.id]["session_expected"]}
    assert {f.mode for f in findings} <= allowed, sorted({f.mode for f in findings} - allowed)


@pytest.mark.parametrize("recording", [r for r in RECORDINGS if r.variant == "no-content" and r.scenario.name == "history_dropped"],
                         ids=lambda r: r.id)
def test_without_content_a_dropped_history_still_shows_in_the_token_counts(recording):
    turns, findings = _diagnosed(recording)
    expected = {e["mode"]: set(e["trace_ids"]) for e in LABELS[recording.id]["session_expected"]}
    lost = [f for f in findings if f.mode == "FM-1.4"]
    assert lost, "FM-1.4 missed without content"
    assert all(f.turn_trace_id in expected["FM-1.4"] for f in lost)
