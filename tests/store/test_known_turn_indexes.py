"""On a store this process alone writes, the tracker gives the store the turns it holds of a
session, and the store makes the session's index from them instead of reading it back
(``SessionTracker.known_indexes``). Property: for any sequence of batches (sessions whose turns
come over several batches, turns given again with a new start, sessions beyond ``max_turns``,
sessions pruned and started again, a batch the store refuses), every table holds the same rows as
the plain path leaves, and the tracker returns, holds and counts the same."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast_otel.processors.config import SessionsConfig
from mast_otel.processors.model import Run, Span
from mast_otel.processors.service.outputs.conversations import QueuedTurn, SessionTracker
from mast_otel.processors.service.store.conversations import ConversationStore, TurnWriter
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.store.span_codec import spans_json
from tests.store.test_new_session_rows import _diagnose, _rows


def _turn(session: int, trace: int, started: int) -> QueuedTurn:
    """A turn whose stored form reads back (the plain path reads the turns it does not hold)."""
    trace_id = f"{trace:032x}"
    span = Span(trace_id, f"{trace:016x}", None, "invoke_agent", started, started + 1, conversation_id=f"s{session}")
    return QueuedTurn(f"s{session}", trace_id, started, f"svc{session % 2}", spans_json([span]),
                      Run.from_spans(trace_id, [span], completion="root_ended"), 100)


@contextmanager
def _tracker(tmp_path, name: str) -> Iterator[SessionTracker]:
    diagnoses = DiagnosisStore(tmp_path / f"{name}.sqlite")
    clock = iter(range(1_000_000))
    store = ConversationStore(diagnoses.database, max_turns=3, max_stored_sessions=4, prune_every=3)
    tracker = SessionTracker(store, SessionsConfig(), Metrics(), wall_clock=lambda: float(next(clock)))
    tracker.diagnose = _diagnose
    try:
        yield tracker
    finally:
        diagnoses.close()


def _held(tracker: SessionTracker) -> dict[str, list[tuple[str, int]]]:
    return {session_id: sorted((t, h.started_ns) for t, h in held.items()) for session_id, held in tracker._held.items()}


class _Refused(Exception):
    pass


# batches of (session, trace, start); a batch marked True fails after its turns were written
_BATCHES = st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 25), st.integers(0, 40)),
                                       min_size=1, max_size=8), st.booleans()),
                    min_size=1, max_size=8)


def _run(tracker: SessionTracker, batches) -> list:
    out = []
    for batch, refused in batches:
        turns = [_turn(*t) for t in batch]
        if refused:
            save = TurnWriter.save_diagnoses

            def fail(*_args, **_kwargs):
                raise _Refused

            TurnWriter.save_diagnoses = fail  # type: ignore[method-assign]  # after the turns' writes: rolled back
            original = tracker.store.errors
            tracker.store.errors = (_Refused,)
            try:
                with pytest.raises(_Refused):
                    tracker._add_batch(turns)
            finally:
                TurnWriter.save_diagnoses, tracker.store.errors = save, original  # type: ignore[method-assign]
            out.append(("refused", _held(tracker)))
            continue
        out.append((tracker.add_many(turns), tracker.revisions.copy(), _held(tracker)))
    return out


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_BATCHES)
def test_indexes_made_from_the_turns_held_leave_what_reading_them_leaves(tmp_path, batches):
    name = f"{abs(hash(str(batches)))}"
    results = {}
    for known in (False, True):
        SessionTracker.known_indexes = known
        try:
            with _tracker(tmp_path, f"{name}-{known}") as tracker:
                steps = _run(tracker, batches)
                results[known] = (_rows(tracker), steps, tracker.metrics.sessions_total.labels("svc0")._value.get())
        finally:
            SessionTracker.known_indexes = True
    assert results[True] == results[False]


def test_a_held_session_is_not_read_back(tmp_path):
    """The shortcut is taken: the second batch of a held session reads no turn index."""
    with _tracker(tmp_path, "reads") as tracker:
        tracker.add_many([_turn(1, 1, 1), _turn(1, 2, 2)])
        assert "s1" in tracker._held
        statements: list[str] = []
        tracker.store._db._db.set_trace_callback(statements.append)
        tracker.add_many([_turn(1, 3, 3)])
        tracker.store._db._db.set_trace_callback(None)
        assert not [s for s in statements if "JOIN conversation_turns" in s]
        assert [t for t, _ in tracker.store.turn_ids("s1")] == [f"{n:032x}" for n in (1, 2, 3)]
