"""The session corpus (tests/sessions/corpus) as the loaders read it: sessions of separate turns, tied by a session id.

Each recording is one conversation of a few user turns through a framework's own conversation
primitive (message history, a thread with a checkpointer, a session object) and its own
instrumentation, against a stub model that answers from what each request holds. These tests
check what the recordings give session detection to work with, not the detection itself
(``test_session_diagnosis``): one trace per turn, the session id read back where the
instrumentation carries one, and the history visible, or visibly missing, in the turns' model calls.
"""

from __future__ import annotations

import json

import pytest

from mast_otel.processors.conversations.ids import session_id_of
from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.model import Run
from tests.sessions.corpus_files import CORPUS, manifests, recordings, scenario_labels, session_of, turn_runs
from tests.sessions.harness.scenarios import SCENARIOS, USER

RECORDINGS = recordings()
CONTENT = [r for r in RECORDINGS if r.variant == "content"]


def _first_model_call(run: Run):
    calls = sorted(run.llm_calls, key=lambda s: s.start_ns)
    assert calls, f"{run.trace_id}: no model call"
    return calls[0]


def _answer(run: Run) -> str:
    return max(run.llm_calls, key=lambda s: s.end_ns).output_text or ""


def _get_pods(run: Run):
    return [s for s in run.tool_calls if s.tool_name == "get_pods"]


def test_the_corpus_covers_four_frameworks_every_scenario_with_and_without_content():
    found = manifests()
    assert len(found) >= 4, sorted(found)
    for framework in found:
        for variant in ("content", "no-content"):
            recorded = {r.scenario.name for r in RECORDINGS if r.framework == framework and r.variant == variant}
            assert recorded == {s.name for s in SCENARIOS}, (framework, variant, recorded)
    for framework in found:
        assert found[framework]["content_capture"] is True
        assert json.loads((CORPUS / framework / "no-content" / "manifest.json").read_text())["content_capture"] is False


def test_the_corpus_label_file_says_what_the_scenarios_say():
    assert json.loads((CORPUS / "labels.json").read_text()) == scenario_labels()


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.id)
def test_every_turn_is_a_trace_of_its_own(recording):
    session = session_of(recording)
    turns = session["turns"]
    assert len(turns) == len(recording.scenario.user_turns)
    assert all(len(t["trace_ids"]) == 1 and t["raised"] is None for t in turns), turns
    runs = turn_runs(recording)
    assert [r.trace_id for r in runs] == [t["trace_ids"][0] for t in turns]
    starts = [min(s.start_ns for s in r.spans) for r in runs]
    assert starts == sorted(starts), "the turns' traces start in the order the turns were sent"


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.id)
def test_the_session_id_is_read_from_every_turn_where_the_instrumentation_carries_one(recording):
    session = session_of(recording)
    carried_in = manifests()[recording.framework]["session_attribute"]
    ids = [session_id_of(run) for run in turn_runs(recording)]
    if carried_in is None:  # e.g. Agent Framework's local sessions: no id on any span
        assert ids == [None] * len(ids)
    else:
        assert ids == [session["session_id"]] * len(ids), carried_in


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.id)
def test_the_model_input_grows_turn_by_turn_only_when_the_history_is_carried(recording):
    """What shows with or without content: each turn's first model call's input tokens."""
    tokens = [_first_model_call(run).input_tokens for run in turn_runs(recording)]
    assert all(isinstance(t, int) and t > 0 for t in tokens), tokens
    if recording.scenario.history:
        assert all(later > earlier for earlier, later in zip(tokens, tokens[1:])), tokens
    else:
        assert max(tokens) < 1.5 * min(tokens), tokens


@pytest.mark.parametrize("recording", [r for r in CONTENT if r.scenario.name in ("history_kept", "history_dropped")],
                         ids=lambda r: r.id)
def test_with_content_the_answer_shows_whether_the_agent_had_the_earlier_turns(recording):
    name_turn = recording.scenario.user_turns.index(next(t for t in recording.scenario.user_turns if "what name" in t))
    answer = _answer(turn_runs(recording)[name_turn])
    if recording.scenario.history:
        assert USER in answer, answer
    else:
        assert "don't know" in answer and USER not in answer, answer


@pytest.mark.parametrize("recording", [r for r in CONTENT if r.scenario.name in ("lookup_repeated", "user_repeats")],
                         ids=lambda r: r.id)
def test_with_content_repeated_lookups_show_the_same_call_and_whether_its_result_changed(recording):
    runs = turn_runs(recording)
    calls = {i: _get_pods(run) for i, run in enumerate(runs)}
    looked_up = [i for i, spans in calls.items() if spans]
    first = calls[looked_up[0]][0]
    assert first.args_hash and first.result_hash, "content recordings carry the call's arguments and result"
    repeats = [calls[i][0] for i in looked_up[1:]]
    assert repeats and all(s.args_hash == first.args_hash for s in repeats)
    if recording.scenario.name == "lookup_repeated":
        assert looked_up == list(range(len(runs)))  # every turn
        assert all(s.result_hash == first.result_hash for s in repeats)
    else:  # the user asked again after the cluster changed: the result differs
        assert all(s.result_hash != first.result_hash for s in repeats)


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.id)
def test_no_turn_alone_shows_a_run_level_mode(recording):
    """Each turn is a clean run on its own: what goes wrong in these sessions shows only between turns."""
    found = {(i, f.mode) for i, run in enumerate(turn_runs(recording)) for f in rule_findings(run)}
    assert not found, sorted(found)
