"""The sessions' tables on SQLite and on a real PostgreSQL alike: a diagnosis covering fewer turns
never replaces one covering more, each (session, mode) is claimed once, a session completes only
when its latest turn is older than the quiet period, and the oldest turns beyond the bound go."""

from __future__ import annotations

import pytest

from mast_otel.processors.conversations.model import SessionFinding, SpanRef
from mast_otel.processors.service.store.conversations import ConversationStore, TurnRow
from mast_otel.processors.service.store.diagnoses import DiagnosisStore


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        diagnoses = DiagnosisStore(tmp_path / "d.sqlite")
    else:
        diagnoses = DiagnosisStore(url=request.getfixturevalue("pg_url"))
    yield ConversationStore(diagnoses.database, max_turns=3, max_stored_sessions=2, prune_every=1_000_000)
    diagnoses.close()


def _finding(trace_id: str) -> SessionFinding:
    return SessionFinding("FM-1.4", 0.7, "history lost", (SpanRef(trace_id, "a" * 16),), trace_id, detector="t")


def test_turns_are_kept_in_start_order_and_bounded(store):
    for i, trace in enumerate(["c" * 32, "a" * 32, "b" * 32]):
        store.add_turn("s", trace, started_ns=[30, 10, 20][i], service_name="svc", spans="{}", now=100.0 + i)
    assert store.trace_ids("s") == ["a" * 32, "b" * 32, "c" * 32]
    assert store.add_turn("s", "d" * 32, 40, "svc", "{}", now=104.0) == 1  # the oldest went
    turns, dropped = store.turns("s")
    assert [t.trace_id for t in turns] == ["b" * 32, "c" * 32, "d" * 32] and dropped == 1
    assert store.turn_index("s") == ([("b" * 32, 20, 2), ("c" * 32, 30, 2), ("d" * 32, 40, 2)], 1)
    assert store.turn_texts("s", ["c" * 32, "z" * 32]) == {"c" * 32: "{}"}
    assert store.add_turn("s", "d" * 32, 40, "svc", '{"again": 1}', now=105.0) == 0  # a re-diagnosed turn replaces its own
    row = store.get("s")
    assert (row.turn_count, row.dropped_turns, row.started_ns, row.last_turn_at) == (3, 1, 10, 105.0)


def test_one_write_of_new_and_known_sessions_indexes_and_saves_each_as_stored(store):
    """A session new to the store has only the turns of this write (beyond the bound, the oldest
    go); a known one has its stored turns too, and its earlier diagnosis and claims count."""
    a, b, c, d = ("a" * 32, "b" * 32, "c" * 32, "d" * 32)
    store.add_turn("old", a, 5, None, "{}", now=1.0)
    store.save_diagnosis("old", [_finding(a)], covered=1, now=1.5, claim=["", "FM-1.4"])
    with store.writing() as writer:
        index = writer.keep_turns([TurnRow("new", c, 3, "svc", "{}"), TurnRow("new", a, 1, "svc", "{}"),
                                   TurnRow("new", b, 2, "svc", "{}"), TurnRow("new", d, 4, "svc", "{}"),
                                   TurnRow("old", b, 6, None, "{}")], now=2.0)
        saved = writer.save_diagnoses([("new", [], 4, [""]), ("old", [], 2, ["", "FM-1.4"])], now=2.0)
    assert [t for t, _, _ in index["new"].turns] == [b, c, d] and (index["new"].dropped, index["new"].dropped_now) == (1, 1)
    assert [t for t, _, _ in index["old"].turns] == [a, b] and index["old"].dropped == 0
    assert saved == [(1, [""]), (2, [])]
    assert store.trace_ids("new") == [b, c, d] and store.get("new").dropped_turns == 1 and store.get("old").revision == 2


def test_a_diagnosis_over_fewer_turns_never_replaces_one_over_more(store):
    store.add_turn("s", "a" * 32, 1, None, "{}", now=1.0)
    assert store.save_diagnosis("s", [_finding("a" * 32)], covered=2, now=2.0, claim=["FM-1.4"]) == (1, ["FM-1.4"])
    assert store.save_diagnosis("s", [], covered=1, now=3.0, claim=["FM-1.4"]) == (None, [])  # a replica that saw less
    row = store.get("s")
    assert row.revision == 1 and [f.mode for f in row.findings] == ["FM-1.4"]
    assert row.findings[0].evidence == (SpanRef("a" * 32, "a" * 16),)
    assert store.count(mode="FM-1.4") == 1 and store.count(with_modes=True) == 1
    assert store.save_diagnosis("s", [], covered=2, now=4.0) == (2, [])  # as many turns: revised
    assert store.count(mode="FM-1.4") == 0 and store.count(with_modes=False) == 1


def test_the_judges_findings_replace_its_own_keep_the_rules_and_outlive_a_rules_revision(store):
    store.add_turn("s", "a" * 32, 1, "svc", "{}", now=1.0)
    rules = SessionFinding("FM-1.3", 0.8, "lookup repeated", (SpanRef("a" * 32, "b" * 16),), "a" * 32, detector="r")
    store.save_diagnosis("s", [rules], covered=2, now=2.0, claim=["FM-1.3"])
    judged = SessionFinding("FM-1.4", 0.9, "LLM judge", (SpanRef("a" * 32, "c" * 16),), "a" * 32, source="judge")
    assert store.save_judge_findings("s", [judged], now=3.0) == (2, ["FM-1.4"], "svc")
    assert store.count(mode="FM-1.4") == 1
    assert store.save_diagnosis("s", [rules], covered=3, now=4.0, claim=["FM-1.3"]) == (3, [])  # a new turn: rules again
    assert [(f.mode, f.source) for f in store.get("s").findings] == [("FM-1.3", "rules"), ("FM-1.4", "judge")]
    again = SessionFinding("FM-1.3", 0.9, "LLM judge", (SpanRef("a" * 32, "d" * 16),), "a" * 32, source="judge")
    assert store.save_judge_findings("s", [again], now=5.0) == (4, [], "svc")  # FM-1.3 was counted by the rules
    assert [(f.mode, f.source) for f in store.get("s").findings] == [("FM-1.3", "rules"), ("FM-1.3", "judge")]
    assert store.count(mode="FM-1.4") == 0 and store.count(mode="FM-1.3") == 1
    assert store.save_judge_findings("gone", [again]) == (None, [], None)


def test_each_key_is_claimed_once(store):
    store.add_turn("s", "a" * 32, 1, None, "{}")
    assert store.claim("s", ["", "FM-1.3"]) == ["", "FM-1.3"]
    assert store.claim("s", ["", "FM-1.3", "FM-1.4"]) == ["FM-1.4"]
    assert store.claim("other", [""]) == [""]


def test_a_session_completes_only_once_quiet_and_opens_again_with_a_turn(store):
    store.add_turn("s", "a" * 32, 1, None, "{}", now=100.0)
    assert not store.complete("s", quiet_before=50.0, now=110.0)  # a newer turn than the quiet period allows
    assert store.complete("s", quiet_before=100.0, now=110.0)
    assert store.get("s").completed_at == 110.0 and store.get("s").complete(110.0, 1e9)
    store.add_turn("s", "b" * 32, 2, None, "{}", now=120.0)
    assert store.get("s").completed_at is None and not store.get("s").complete(121.0, 60.0)


def test_the_least_recently_active_sessions_are_pruned_beyond_the_bound(store):
    for i, session in enumerate(["old", "mid", "new"]):
        store.add_turn(session, f"{i:032x}", i, None, "{}", now=float(i))
        store.claim(session, [""])
    assert store.prune() == 1
    assert store.get("old") is None and store.trace_ids("old") == [] and store.claim("old", [""]) == [""]
    assert [r.session_id for r in store.query()] == ["new", "mid"]
