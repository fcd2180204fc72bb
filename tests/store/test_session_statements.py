"""What grouping turns costs the store, counted in SQL statements (each row of a batched statement
counted): a batch of turns writes a row per session and per turn, a diagnosis and a claim per
session (a session new to the store: its row written with its diagnosis, and no claims read),
and a few statements per batch whatever its size; a run without a session id costs none.
Statements are what turns cost the processor's CPU once the spans are encoded (about 60% of the
sessions' share of an end-to-end run when every run carried an id and each turn took ~11)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from mast_otel.processors.config import SessionsConfig
from mast_otel.processors.model import Run
from mast_otel.processors.service.outputs.base import Batch, DiagnosedRun
from mast_otel.processors.service.outputs.conversations import SessionTracker
from mast_otel.processors.service.store.conversations import ConversationStore
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from mast_otel.processors.service.telemetry.metrics import Metrics
from tests.conversations.turns import TurnSpec, session

PER_TURN = 3  # turn row, session row with its diagnosis, claim of a new session
PER_BATCH = 12  # the reads, the rare deletes and mode rows, BEGIN and COMMIT


@dataclass
class Counted:
    tracker: SessionTracker
    statements: list[str]


@pytest.fixture
def counted(tmp_path) -> Iterator[Counted]:
    diagnoses = DiagnosisStore(tmp_path / "d.sqlite")
    store = ConversationStore(diagnoses.database, max_turns=200, max_stored_sessions=100_000)
    statements: list[str] = []
    diagnoses.database._db.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    yield Counted(SessionTracker(store, SessionsConfig(), Metrics()), statements)
    diagnoses.close()


def _runs(sessions: int, turns: int, *, with_id: bool = True) -> list[Run]:
    specs = [TurnSpec([("user", f"question {i}")], f"answer {i}") for i in range(turns)]
    runs = [t.run for n in range(sessions) for t in session(specs, session_id=f"conv-{n}")]
    if not with_id:
        for run in runs:
            for span in run.spans:
                span.conversation_id = None
    return runs


def _batch(runs: list[Run]) -> Batch:
    return Batch([DiagnosedRun("diagnosis", None, None, None, None, run=run) for run in runs])  # type: ignore[arg-type]


def _keep(counted: Counted, runs: list[Run]) -> int:
    """Statements spent keeping and diagnosing ``runs``' turns, as the worker does, in one batch."""
    counted.tracker.export(_batch(runs))
    queued = list(counted.tracker._queue)
    counted.tracker._queue.clear()
    before = len(counted.statements)
    counted.tracker._add_batch(queued)
    return len(counted.statements) - before


def test_a_batch_of_new_sessions_costs_a_few_rows_per_turn(counted):
    runs = _runs(sessions=40, turns=1)
    spent = _keep(counted, runs)
    assert spent <= PER_TURN * len(runs) + PER_BATCH, spent
    assert counted.tracker.store.count() == 40 and all(counted.tracker.store.get(f"conv-{n}").revision == 1 for n in range(40))


def test_a_batch_of_new_sessions_writes_each_row_once_and_reads_no_claim(counted):
    spent = _keep(counted, _runs(sessions=40, turns=1))
    written = counted.statements[-spent:]
    assert [s for s in written if s.startswith("UPDATE conversations")] == []
    assert [s for s in written if "FROM conversation_counted" in s] == []
    assert counted.tracker.store.get("conv-7").revision == 1 and counted.tracker.store.claim("conv-7", [""]) == []


def test_a_batch_of_new_sessions_reads_none_of_their_turns_back(counted):
    """Sessions new to the store have only the turns just written: their turn index is not read."""
    spent = _keep(counted, _runs(sessions=40, turns=1))
    assert [s for s in counted.statements[-spent:] if "conversation_turns" in s and "SELECT" in s] == []
    assert counted.tracker.store.get("conv-3").turn_count == 1


def test_later_turns_of_open_sessions_cost_no_more_and_read_no_turn_back(counted):
    runs = _runs(sessions=8, turns=5)  # turns 0-1 of each session first, then 2-4
    first = [r for i, r in enumerate(runs) if i % 5 < 2]
    later = [r for i, r in enumerate(runs) if i % 5 >= 2]
    _keep(counted, first)
    spent = _keep(counted, later)
    assert spent <= PER_TURN * len(later) + PER_BATCH, spent
    reads = [s for s in counted.statements[-spent:] if "SELECT" in s and "spans FROM" in s]
    assert reads == []  # the turns kept before are held parsed: none is read back
    assert [counted.tracker.store.get(f"conv-{n}").turn_count for n in range(8)] == [5] * 8


def test_a_run_without_a_session_id_costs_no_statement(counted):
    before = len(counted.statements)
    counted.tracker.export(_batch(_runs(sessions=10, turns=1, with_id=False)))
    counted.tracker.complete_quiet()
    assert not counted.tracker._queue and len(counted.statements) == before
