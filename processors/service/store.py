"""The diagnosis store: embedded SQLite (WAL), thread-safe, surviving restarts.

One row per run with its summary, findings (evidence span ids and explanations), withdrawn
live findings, outcome and score; a ``diagnosis_modes`` table indexes modes for filtering, and
``run_steps`` keeps each run's compact step list (``steps``; one JSON row, no content).
The store also persists the merge stage's metric accounting per run (which (run, mode) pairs
were counted) so a re-diagnosis after a restart never counts a pair twice, and outcomes that
arrived before their run was diagnosed.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Container, Iterable, Mapping, NamedTuple, Sequence

from mast_otel.processors.attribution import Attribution
from mast_otel.processors.model import Diagnosis, Finding
from mast_otel.processors.service import compact_json
from mast_otel.processors.service.compact_json import plain_float
from mast_otel.processors.service.outputs.base import Accounting
from mast_otel.processors.service.run_steps import RunStep, StepList, parse_steps
from mast_otel.processors.usage import UsageError

class ModelCounts(NamedTuple):
    """One model's runs in a window of the store (``model`` is ``None`` when runs named none)."""

    model: str | None
    runs: int
    successes: int
    failures: int
    fatal_runs: int  # runs with a mode whose severity was fatal when diagnosed
    modes_in_failed_runs: int


class ModeCounts(NamedTuple):
    """Runs of one model showing one mode, by outcome (``None`` when unknown)."""

    model: str | None
    mode: str
    outcome: str | None
    runs: int


_SCHEMA = """
CREATE TABLE IF NOT EXISTS diagnoses (
    trace_id     TEXT PRIMARY KEY,
    service_name TEXT,
    agent        TEXT,
    model        TEXT,
    root_span_id TEXT,
    outcome      TEXT,
    score        REAL,
    started_ns   INTEGER,
    ended_ns     INTEGER,
    diagnosed_at REAL NOT NULL,
    completion   TEXT NOT NULL,
    span_count   INTEGER NOT NULL,
    step_count   INTEGER NOT NULL,
    revision     INTEGER NOT NULL,
    fatal        INTEGER NOT NULL,
    mode_count   INTEGER NOT NULL,
    findings     TEXT NOT NULL,
    withdrawn    TEXT NOT NULL,
    accounting   TEXT NOT NULL,
    attribution  TEXT
);
CREATE INDEX IF NOT EXISTS diagnoses_time ON diagnoses (diagnosed_at);
CREATE INDEX IF NOT EXISTS diagnoses_model ON diagnoses (model, diagnosed_at);
CREATE INDEX IF NOT EXISTS diagnoses_agent ON diagnoses (agent, diagnosed_at);
CREATE TABLE IF NOT EXISTS diagnosis_modes (
    trace_id TEXT NOT NULL,
    mode     TEXT NOT NULL,
    PRIMARY KEY (mode, trace_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS diagnosis_modes_trace ON diagnosis_modes (trace_id);
CREATE TABLE IF NOT EXISTS pending_outcomes (
    trace_id    TEXT PRIMARY KEY,
    outcome     TEXT NOT NULL,
    score       REAL,
    received_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS pending_outcomes_time ON pending_outcomes (received_at);
CREATE TABLE IF NOT EXISTS run_steps (
    trace_id TEXT PRIMARY KEY,
    steps    TEXT NOT NULL
);
"""

_COLUMNS = (
    "trace_id", "service_name", "agent", "model", "root_span_id", "outcome", "score", "started_ns", "ended_ns",
    "diagnosed_at", "completion", "span_count", "step_count", "revision", "fatal", "mode_count", "findings",
    "withdrawn", "attribution", "accounting",
)
_UPSERT = (
    f"INSERT INTO diagnoses ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
    f"ON CONFLICT(trace_id) DO UPDATE SET {', '.join(f'{c}=excluded.{c}' for c in _COLUMNS[1:])}"
)
_SELECT = f"SELECT {', '.join(_COLUMNS[:-1])} FROM diagnoses"


_FINDING_FIELDS = tuple(f.name for f in dataclasses.fields(Finding))


def _findings_json(findings: Sequence[Finding]) -> str:
    """Findings as compact JSON objects of their fields; :mod:`compact_json` writes them as
    they are when their confidences (their only floats) are plain (the usual case), the
    standard encoder otherwise."""
    if not findings:
        return "[]"
    if all(plain_float(f.confidence) for f in findings):
        return compact_json.dumps(findings)
    return json.dumps([{name: getattr(f, name) for name in _FINDING_FIELDS} for f in findings], separators=(",", ":"))


def _findings(text: str) -> list[Finding]:
    out = []
    for item in json.loads(text):
        item["evidence_span_ids"] = tuple(item.get("evidence_span_ids") or ())
        out.append(Finding(**item))
    return out


def _timestamp(value: float | datetime | None) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    return value


class StoreUnavailable(UsageError):
    """The store's path cannot hold a SQLite database (a file in the way, no permission, not SQLite)."""


class DiagnosisStore:
    """SQLite-backed diagnoses. One connection guarded by a lock; safe from any thread."""

    def __init__(self, path: str | Path, max_rows: int = 1_000_000, prune_every: int = 1000,
                 pending_ttl_seconds: float = 86_400.0, max_pending: int = 100_000) -> None:
        self.path = Path(path)
        self.max_rows = max_rows
        self.prune_every = prune_every
        # outcomes posted for traces that never arrive: dropped after a while, and bounded
        self.pending_ttl_seconds = pending_ttl_seconds
        self.max_pending = max_pending
        self._pending_since_prune = 0
        self._lock = threading.RLock()
        try:
            if str(path) != ":memory:":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.DatabaseError) as exc:
            where = f"{exc.filename}: " if getattr(exc, "filename", None) and str(exc.filename) != str(path) else ""
            raise StoreUnavailable(f"cannot open the store {path}: {where}{getattr(exc, 'strerror', None) or exc}") from None
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(diagnoses)")}
        if "attribution" not in columns:  # a store written before attribution was kept
            self._db.execute("ALTER TABLE diagnoses ADD COLUMN attribution TEXT")
        self._saves_since_prune = 0
        # Outcomes kept for runs not diagnosed yet: usually none, and then every diagnosis
        # skips the look-up (this process is the store's only writer).
        (self._pending_outcomes,) = self._db.execute("SELECT COUNT(*) FROM pending_outcomes").fetchone()

    # --- writing ------------------------------------------------------------------------------
    def save(self, diagnosis: Diagnosis, accounting: Accounting | None = None) -> None:
        self.save_many([(diagnosis, accounting)])

    def save_many(self, items: Iterable[tuple[Diagnosis, Accounting | None]],
                  step_texts: Mapping[str, str] | None = None, *, first: Container[str] = ()) -> None:
        """Upsert diagnoses in one transaction (``None`` accounting keeps the stored one), with the
        runs' step lists as ``steps_json`` wrote them in ``step_texts`` (by trace id; runs not in
        it keep theirs).

        ``first`` names runs the caller knows the store never held (their first diagnosis): they
        have no mode rows to delete, which saves a look-up per run."""
        items = list(items)
        if not items:
            return
        with self._lock, self._transaction():
            if step_texts:
                self._db.executemany("INSERT OR REPLACE INTO run_steps (trace_id, steps) VALUES (?, ?)", step_texts.items())
            latest: dict[str, tuple[tuple, list[str]]] = {}  # trace id -> row, modes (the last save of it wins)
            for d, accounting in items:
                if accounting is None:
                    accounting = self.accounting(d.trace_id)
                modes = d.modes
                latest[d.trace_id] = ((
                    d.trace_id, d.service_name, d.agent, d.model, d.root_span_id, d.outcome, d.score, d.started_ns,
                    d.ended_ns, d.diagnosed_at, d.completion, d.span_count, d.step_count, d.revision, int(d.fatal),
                    len(modes), _findings_json(d.findings), _findings_json(d.withdrawn), _attribution_json(d),
                    accounting.to_json(),
                ), modes)
            self._db.executemany(_UPSERT, [row for row, _ in latest.values()])
            self._db.executemany("DELETE FROM diagnosis_modes WHERE trace_id = ?", [(t,) for t in latest if t not in first])
            self._db.executemany("INSERT INTO diagnosis_modes (trace_id, mode) VALUES (?, ?)",
                                 [(t, m) for t, (_, modes) in latest.items() for m in modes])
            self._saves_since_prune += len(items)
            if self._saves_since_prune >= self.prune_every:
                self._prune()

    def _prune(self) -> None:
        self._saves_since_prune = 0
        (count,) = self._db.execute("SELECT COUNT(*) FROM diagnoses").fetchone()
        excess = count - self.max_rows
        if excess > 0:
            doomed = "SELECT trace_id FROM diagnoses ORDER BY diagnosed_at LIMIT ?"
            self._db.execute(f"DELETE FROM diagnosis_modes WHERE trace_id IN ({doomed})", (excess,))
            self._db.execute(f"DELETE FROM run_steps WHERE trace_id IN ({doomed})", (excess,))
            self._db.execute(f"DELETE FROM diagnoses WHERE trace_id IN ({doomed})", (excess,))
        self._prune_pending()

    def _prune_pending(self) -> int:
        """Drop pending outcomes older than the TTL, then the oldest beyond ``max_pending``."""
        self._pending_since_prune = 0
        expired = self._db.execute("DELETE FROM pending_outcomes WHERE received_at < ?",
                                   (time.time() - self.pending_ttl_seconds,)).rowcount
        over = self._db.execute(
            "DELETE FROM pending_outcomes WHERE trace_id IN "
            "(SELECT trace_id FROM pending_outcomes ORDER BY received_at DESC LIMIT -1 OFFSET ?)", (self.max_pending,)).rowcount
        return expired + over

    def set_outcome(self, trace_id: str, outcome: str, score: float | None = None) -> Diagnosis | None:
        """Record a diagnosed run's outcome; ``None`` when the run is not in the store."""
        with self._lock:
            cur = self._db.execute("UPDATE diagnoses SET outcome = ?, score = COALESCE(?, score) WHERE trace_id = ?", (outcome, score, trace_id))
            return self.get(trace_id) if cur.rowcount else None

    def set_accounting(self, trace_id: str, accounting: Accounting) -> None:
        with self._lock:
            self._db.execute("UPDATE diagnoses SET accounting = ? WHERE trace_id = ?", (accounting.to_json(), trace_id))

    def put_pending_outcome(self, trace_id: str, outcome: str, score: float | None = None) -> None:
        """Keep an outcome that arrived before its run was diagnosed."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO pending_outcomes (trace_id, outcome, score, received_at) VALUES (?, ?, ?, ?)",
                (trace_id, outcome, score, time.time()),
            )
            self._pending_since_prune += 1
            if self._pending_since_prune >= min(self.prune_every, self.max_pending):
                self._prune_pending()
            (self._pending_outcomes,) = self._db.execute("SELECT COUNT(*) FROM pending_outcomes").fetchone()

    def take_pending_outcome(self, trace_id: str) -> tuple[str, float | None] | None:
        if not self._pending_outcomes:
            return None
        with self._lock, self._transaction():
            row = self._db.execute("SELECT outcome, score, received_at FROM pending_outcomes WHERE trace_id = ?",
                                   (trace_id,)).fetchone()
            if row is None:
                return None
            self._db.execute("DELETE FROM pending_outcomes WHERE trace_id = ?", (trace_id,))
            self._pending_outcomes -= 1
            return None if row[2] < time.time() - self.pending_ttl_seconds else (row[0], row[1])

    # --- reading ------------------------------------------------------------------------------
    def get(self, trace_id: str) -> Diagnosis | None:
        with self._lock:
            row = self._db.execute(f"{_SELECT} WHERE trace_id = ?", (trace_id,)).fetchone()
        return _diagnosis(row) if row else None

    def steps(self, trace_id: str) -> StepList | None:
        """The run's stored step list, or ``None`` when none was kept."""
        with self._lock:
            row = self._db.execute("SELECT steps FROM run_steps WHERE trace_id = ?", (trace_id,)).fetchone()
        return parse_steps(row[0]) if row else None

    def recent_steps(self, limit: int) -> list[list[RunStep]]:
        """The step lists of the ``limit`` most recently diagnosed runs."""
        sql = ("SELECT s.steps FROM run_steps s JOIN diagnoses d ON d.trace_id = s.trace_id "
               "ORDER BY d.diagnosed_at DESC LIMIT ?")
        with self._lock:
            rows = self._db.execute(sql, (limit,)).fetchall()
        return [parse_steps(row[0]) for row in rows]

    def exists(self, trace_id: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM diagnoses WHERE trace_id = ?", (trace_id,)).fetchone() is not None

    def existing(self, trace_ids: Iterable[str]) -> set[str]:
        """Those of ``trace_ids`` that have a stored diagnosis (one query per 500 ids)."""
        ids, found = list(trace_ids), set()
        with self._lock:
            for i in range(0, len(ids), 500):
                chunk = ids[i:i + 500]
                sql = f"SELECT trace_id FROM diagnoses WHERE trace_id IN ({','.join('?' * len(chunk))})"
                found.update(row[0] for row in self._db.execute(sql, chunk))
        return found

    def accounting(self, trace_id: str) -> Accounting:
        with self._lock:
            row = self._db.execute("SELECT accounting FROM diagnoses WHERE trace_id = ?", (trace_id,)).fetchone()
        return Accounting.from_json(row[0] if row else None)

    def query(
        self, *, model: str | None = None, agent: str | None = None, mode: str | None = None, outcome: str | None = None,
        service: str | None = None, since: float | datetime | None = None, until: float | datetime | None = None,
        fatal: bool | None = None, limit: int = 50, offset: int = 0,
    ) -> list[Diagnosis]:
        """Diagnoses matching every given filter, newest first. ``since``/``until`` bound the run's start."""
        where, params = _filters(model, agent, mode, outcome, service, since, until, fatal)
        sql = f"{_SELECT}{where} ORDER BY diagnosed_at DESC, trace_id LIMIT ? OFFSET ?"
        with self._lock:
            rows = self._db.execute(sql, (*params, limit, offset)).fetchall()
        return [_diagnosis(r) for r in rows]

    def count(
        self, *, model: str | None = None, agent: str | None = None, mode: str | None = None, outcome: str | None = None,
        service: str | None = None, since: float | datetime | None = None, until: float | datetime | None = None,
        fatal: bool | None = None,
    ) -> int:
        """How many diagnoses ``query`` would page through with the same filters."""
        where, params = _filters(model, agent, mode, outcome, service, since, until, fatal)
        with self._lock:
            return self._db.execute(f"SELECT COUNT(*) FROM diagnoses{where}", params).fetchone()[0]

    def counts(self, *, since: float | datetime | None = None, until: float | datetime | None = None,
               latest: int | None = None) -> tuple[list[ModelCounts], list[ModeCounts]]:
        """Per model and per (model, mode, outcome) run counts over the ``latest`` runs started in
        [``since``, ``until``), aggregated in SQL: the overview and ``/v1/severity`` never load
        the diagnoses themselves."""
        where, params = _filters(None, None, None, None, None, since, until, None)
        window = f"SELECT trace_id, model, outcome, fatal, mode_count FROM diagnoses{where} ORDER BY diagnosed_at DESC, trace_id"
        if latest is not None:
            window += " LIMIT ?"
            params = [*params, latest]
        per_model = (f"WITH w AS ({window}) SELECT model, COUNT(*), SUM(outcome = 'success'), SUM(outcome = 'failure'), "
                     "SUM(fatal), SUM(CASE WHEN outcome = 'failure' THEN mode_count ELSE 0 END) FROM w GROUP BY model")
        per_mode = (f"WITH w AS ({window}) SELECT w.model, m.mode, w.outcome, COUNT(*) FROM w "
                    "JOIN diagnosis_modes m ON m.trace_id = w.trace_id GROUP BY w.model, m.mode, w.outcome")
        with self._lock:
            models = [ModelCounts(*row) for row in self._db.execute(per_model, params)]
            modes = [ModeCounts(*row) for row in self._db.execute(per_mode, params)]
        return models, modes

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _transaction(self):
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, exc_type, *_: Any) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def _filters(model, agent, mode, outcome, service, since, until, fatal) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in (("model", model), ("agent", agent), ("outcome", outcome), ("service_name", service)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if fatal is not None:
        clauses.append("fatal = ?")
        params.append(int(fatal))
    if mode is not None:
        clauses.append("trace_id IN (SELECT trace_id FROM diagnosis_modes WHERE mode = ?)")
        params.append(mode)
    start = "COALESCE(started_ns, CAST(diagnosed_at * 1e9 AS INTEGER))"
    for op, value in ((">=", _timestamp(since)), ("<", _timestamp(until))):
        if value is not None:
            clauses.append(f"{start} {op} ?")
            params.append(int(value * 1e9))
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _diagnosis(row: tuple) -> Diagnosis:
    (trace_id, service_name, agent, model, root_span_id, outcome, score, started_ns, ended_ns, diagnosed_at,
     completion, span_count, step_count, revision, fatal, _mode_count, findings, withdrawn, attribution) = row
    return Diagnosis(
        trace_id=trace_id, findings=_findings(findings), fatal=bool(fatal), service_name=service_name, agent=agent,
        model=model, root_span_id=root_span_id, outcome=outcome, score=score, started_ns=started_ns, ended_ns=ended_ns,
        diagnosed_at=diagnosed_at, completion=completion, span_count=span_count, step_count=step_count,
        revision=revision, withdrawn=_findings(withdrawn), attribution=_attribution(attribution),
    )


def _attribution_json(d: Diagnosis) -> str | None:
    return None if d.attribution is None else json.dumps(d.attribution.as_dict())


def _attribution(text: str | None) -> Attribution | None:
    return None if not text else Attribution.from_dict(json.loads(text))
