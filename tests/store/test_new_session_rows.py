"""A session new to a store this process alone writes has its row written once, with its first
diagnosis, instead of inserted then updated (``TurnWriter.fold_new_sessions``). Property: for any
sequence of batches (new and known sessions, turns given twice, sessions beyond ``max_turns``,
diagnoses that fail, modes found), every table holds the same rows as the plain path leaves, and
the tracker counts and returns the same."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast_otel.processors.config import SessionsConfig
from mast_otel.processors.conversations.model import SessionFinding, SpanRef, Turn
from mast_otel.processors.conversations.settings import SessionDetectionConfig
from mast_otel.processors.model import Run, Span
from mast_otel.processors.service.outputs.conversations import QueuedTurn, SessionTracker
from mast_otel.processors.service.store.conversations import ConversationStore, TurnWriter
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from mast_otel.processors.service.telemetry.metrics import Metrics

TABLES = ("conversations", "conversation_turns", "conversation_modes", "conversation_counted")


def _diagnose(turns: Sequence[Turn], config: SessionDetectionConfig) -> list[SessionFinding]:
    """A stand-in detection whose findings depend on the turns: a mode per two turns, and a
    failure for sessions whose id ends in 3 once they have three turns."""
    if turns and turns[0].session_id.endswith("3") and len(turns) >= 3:
        raise RuntimeError("a detector's bug")
    return [SessionFinding(f"FM-1.{1 + n % 3}", 0.5, "seen", (SpanRef(turns[n].run.trace_id, "s"),), turns[n].run.trace_id)
            for n in range(0, len(turns) - 1, 2)]


def _turn(session: int, trace: int, started: int) -> QueuedTurn:
    trace_id = f"{trace:032x}"
    span = Span(trace_id, f"{trace:016x}", None, "invoke_agent", started, started + 1, conversation_id=f"s{session}")
    return QueuedTurn(f"s{session}", trace_id, started, f"svc{session % 2}", f'{{"t":{trace}}}',
                      Run.from_spans(trace_id, [span], completion="root_ended"), 100)


@contextmanager
def _tracker(tmp_path, name: str) -> Iterator[SessionTracker]:
    diagnoses = DiagnosisStore(tmp_path / f"{name}.sqlite")
    clock = iter(range(1_000_000))
    tracker = SessionTracker(ConversationStore(diagnoses.database, max_turns=3, max_stored_sessions=10_000),
                             SessionsConfig(), Metrics(), wall_clock=lambda: float(next(clock)))
    tracker.diagnose = _diagnose
    try:
        yield tracker
    finally:
        diagnoses.close()


def _rows(tracker: SessionTracker) -> dict[str, list[tuple]]:
    with tracker.store._db.session() as s:
        return {table: sorted(s.execute(f"SELECT * FROM {table}").fetchall()) for table in TABLES}


_BATCHES = st.lists(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 30), st.integers(0, 50)), min_size=1, max_size=10),
                    min_size=1, max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_BATCHES)
def test_new_sessions_written_with_their_diagnosis_leave_the_rows_the_plain_path_leaves(tmp_path, batches):
    name = f"{abs(hash(str(batches)))}"
    results = {}
    for fold in (False, True):
        TurnWriter.fold_new_sessions = fold
        try:
            with _tracker(tmp_path, f"{name}-{fold}") as tracker:
                revisions = [tracker._add_batch([_turn(*t) for t in batch]) or tracker.revisions.copy() for batch in batches]
                counts = tracker.metrics.sessions_total.labels("svc0")._value.get()
                results[fold] = (_rows(tracker), revisions, counts)
        finally:
            TurnWriter.fold_new_sessions = True
    assert results[True] == results[False]


def test_a_new_session_whose_diagnosis_fails_still_has_its_row(tmp_path):
    with _tracker(tmp_path, "fails") as tracker:
        tracker._add_batch([_turn(3, 1, 1), _turn(3, 2, 2), _turn(3, 3, 3), _turn(4, 4, 4)])
        row = tracker.store.get("s3")
        assert row is not None and row.turn_count == 3 and row.revision == 0
        assert tracker.store.get("s4").revision == 1


def test_a_new_session_beyond_max_turns_counts_the_turns_dropped(tmp_path):
    with _tracker(tmp_path, "dropped") as tracker:
        tracker._add_batch([_turn(5, n, n) for n in range(5)])
        row = tracker.store.get("s5")
        assert row is not None and (row.turn_count, row.dropped_turns, row.revision) == (3, 2, 1)
