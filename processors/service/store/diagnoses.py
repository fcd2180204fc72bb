"""The diagnosis store: embedded SQLite (one process) or PostgreSQL (replicas sharing it).

One row per run with its summary, findings (evidence span ids and explanations), withdrawn
live findings, outcome and score; a ``diagnosis_modes`` table indexes modes for filtering, and
``run_steps`` keeps each run's compact step list (``steps``; one JSON row, no content).
The store also persists the merge stage's metric accounting per run (which (run, mode) pairs
were counted) so a re-diagnosis after a restart never counts a pair twice, and outcomes that
arrived before their run was diagnosed. A shared store also keeps each run's spans, so the
replica that receives a run's later spans (after the gateway re-routed it) re-diagnoses the whole
run, and the judge's verdicts, so no replica pays twice for a run another one judged.

The SQL is written once; :mod:`database` runs it on either database.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Container, Iterable, Iterator, Mapping, NamedTuple, Sequence

from mast_otel.processors.attribution import Attribution
from mast_otel.processors.config import MergeConfig, StoreConfig
from mast_otel.processors.model import Diagnosis, Finding
from mast_otel.processors.service.store import compact_json
from mast_otel.processors.service.store.compact_json import plain_float
from mast_otel.processors.service.store.accounting import Accounting
from mast_otel.processors.service.store.run_steps import RunStep, StepList, parse_steps
from mast_otel.processors.service.store.database import Database, Session, StoreUnavailable, open_database  # noqa: F401  (re-exported)

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


class ModelCountsPage(NamedTuple):
    """Counts for a severity reading that stays bounded however many models the store holds:
    every model together, then one page of models (most runs with a known outcome first)."""

    total: ModelCounts  # every model in the window together (``model`` is ``None``)
    total_modes: list[ModeCounts]  # every model together, per (mode, outcome) (``model`` is ``None``)
    models: list[ModelCounts]  # the page, in order
    modes: list[ModeCounts]  # the page's models, per (model, mode, outcome)
    model_count: int  # models in the window (runs that named none count as one)


def page_of_counts(models: list[ModelCounts], modes: list[ModeCounts], *, model: str | None = None,
                   unnamed: bool = False, limit: int = 50, offset: int = 0) -> ModelCountsPage:
    """:meth:`DiagnosisStore.model_counts_page` from counts already in memory (the same order)."""
    total = ModelCounts(None, *(sum(column) for column in zip(*(c[1:] for c in models)))) if models else ModelCounts(None, 0, 0, 0, 0, 0)
    total_modes: dict[tuple[str, str | None], int] = {}
    for c in modes:
        total_modes[(c.mode, c.outcome)] = total_modes.get((c.mode, c.outcome), 0) + c.runs
    chosen = [c for c in models if (c.model is None if unnamed else model is None or c.model == model)]
    chosen.sort(key=lambda c: (-(c.successes + c.failures), -c.runs, c.model or ""))
    page = chosen[offset:offset + limit]
    names = {c.model for c in page}
    return ModelCountsPage(total, [ModeCounts(None, mode, outcome, runs) for (mode, outcome), runs in total_modes.items()],
                           page, [c for c in modes if c.model in names], len(models))


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
_UPSERT_STEPS = "INSERT INTO run_steps (trace_id, steps) VALUES (?, ?) ON CONFLICT(trace_id) DO UPDATE SET steps = excluded.steps"
_UPSERT_SPANS = "INSERT INTO run_spans (trace_id, spans) VALUES (?, ?) ON CONFLICT(trace_id) DO UPDATE SET spans = excluded.spans"
_UPSERT_PENDING = (
    "INSERT INTO pending_outcomes (trace_id, outcome, score, received_at) VALUES (?, ?, ?, ?) ON CONFLICT(trace_id) "
    "DO UPDATE SET outcome = excluded.outcome, score = excluded.score, received_at = excluded.received_at"
)
_UPSERT_VERDICT = (
    "INSERT INTO judge_verdicts (cache_key, assessment, stored_at) VALUES (?, ?, ?) ON CONFLICT(cache_key) "
    "DO UPDATE SET assessment = excluded.assessment, stored_at = excluded.stored_at"
)


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


class DiagnosisStore:
    """Diagnoses in SQLite (``path``) or PostgreSQL (``url``); safe from any thread.

    ``retention_days`` bounds the age of what is kept: every ``prune_every`` saves (and on each
    :meth:`prune` call) at most ``prune_batch`` of the oldest expired runs are deleted, so one
    pass never holds the database for long."""

    def __init__(self, path: str | Path = ":memory:", max_rows: int = 1_000_000, prune_every: int = 1000,
                 pending_ttl_seconds: float = 86_400.0, max_pending: int = 100_000, *, url: str | None = None,
                 retention_days: float | None = None, prune_batch: int = 5000, pool_size: int = 4,
                 api_pool_size: int = 4, connect_timeout: float = 0.0, api_statement_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self.max_rows = max_rows
        self.prune_every = prune_every
        self.retention_days = retention_days
        self.prune_batch = prune_batch
        # outcomes posted for traces that never arrive: dropped after a while, and bounded
        self.pending_ttl_seconds = pending_ttl_seconds
        self.max_pending = max_pending
        self._pending_since_prune = 0
        self._db = open_database(url, path, pool_size=pool_size, api_pool_size=api_pool_size,
                                 connect_timeout=connect_timeout, api_statement_timeout=api_statement_timeout)
        self.shared = self._db.shared
        self.errors: tuple[type[Exception], ...] = self._db.errors
        self.data_errors: tuple[type[Exception], ...] = self._db.data_errors
        self.where = self._db.where
        self._counter_lock = threading.Lock()
        self._saves_since_prune = 0
        # Outcomes kept for runs not diagnosed yet: usually none, and then every diagnosis skips
        # the look-up. Only a store this process alone writes can know that without asking.
        with self._db.session() as s:
            (self._pending_outcomes,) = s.execute("SELECT COUNT(*) FROM pending_outcomes").fetchone()

    @classmethod
    def from_config(cls, store: StoreConfig, merge: MergeConfig) -> DiagnosisStore:
        return cls(store.path, store.max_rows, store.prune_every, pending_ttl_seconds=merge.pending_outcome_ttl_seconds,
                   max_pending=merge.pending_outcomes, url=store.url.get_secret_value() if store.url else None,
                   retention_days=store.retention_days, prune_batch=store.prune_batch, pool_size=store.pool_size,
                   api_pool_size=store.api_pool_size, connect_timeout=store.connect_timeout_seconds,
                   api_statement_timeout=store.api_statement_timeout_seconds)

    @property
    def database(self) -> Database:
        """The database under the store, for the parts that keep their own tables in it (sessions)."""
        return self._db

    @property
    def keeps_spans(self) -> bool:
        """Whether runs' spans are stored: only a shared store can see a run's spans arrive at two places."""
        return self.shared

    # --- writing ------------------------------------------------------------------------------
    def save(self, diagnosis: Diagnosis, accounting: Accounting | None = None) -> None:
        self.save_many([(diagnosis, accounting)])

    def save_many(self, items: Iterable[tuple[Diagnosis, Accounting | None]],
                  step_texts: Mapping[str, str] | None = None, *, first: Container[str] = (),
                  span_texts: Mapping[str, str] | None = None) -> None:
        """Upsert diagnoses in one transaction (``None`` accounting keeps the stored one), with the
        runs' step lists as ``steps_json`` wrote them in ``step_texts`` and their spans as
        :func:`span_codec.spans_json` wrote them in ``span_texts`` (by trace id; runs not in them
        keep theirs).

        ``first`` names runs the caller knows the store never held (their first diagnosis): they
        have no mode rows to delete, which saves a look-up per run."""
        items = list(items)
        if not items:
            return
        with self._db.session(write=True) as s:
            if step_texts:
                s.executemany(_UPSERT_STEPS, step_texts.items())
            if span_texts:
                s.executemany(_UPSERT_SPANS, span_texts.items())
            latest: dict[str, tuple[tuple, list[str]]] = {}  # trace id -> row, modes (the last save of it wins)
            for d, accounting in items:
                if accounting is None:
                    accounting = _accounting(s, d.trace_id)
                modes = d.modes
                latest[d.trace_id] = ((
                    d.trace_id, d.service_name, d.agent, d.model, d.root_span_id, d.outcome, d.score, d.started_ns,
                    d.ended_ns, d.diagnosed_at, d.completion, d.span_count, d.step_count, d.revision, int(d.fatal),
                    len(modes), _findings_json(d.findings), _findings_json(d.withdrawn), _attribution_json(d),
                    accounting.to_json(),
                ), modes)
            s.executemany(_UPSERT, [row for row, _ in latest.values()])
            s.executemany("DELETE FROM diagnosis_modes WHERE trace_id = ?", [(t,) for t in latest if t not in first])
            s.executemany("INSERT INTO diagnosis_modes (trace_id, mode) VALUES (?, ?)",
                          [(t, m) for t, (_, modes) in latest.items() for m in modes])
        with self._counter_lock:
            self._saves_since_prune += len(items)
            due = self._saves_since_prune >= self.prune_every
            if due:
                self._saves_since_prune = 0
        if due:
            self.prune()

    def claim_runs(self, trace_ids: Sequence[str], owner: str, hold_seconds: float) -> set[str]:
        """Those of ``trace_ids`` ``owner`` may diagnose as new runs: unclaimed, claimed by it, or
        claimed by another more than ``hold_seconds`` ago (a replica that died before storing).
        Two replicas completing parts of one run at once: one gets it, the other waits for its
        diagnosis and merges into it."""
        claimed: set[str] = set()
        now = time.time()
        with self._db.session(write=True) as s:
            for chunk in _chunks(list(trace_ids)):
                sql = (f"INSERT INTO run_claims (trace_id, owner, claimed_at) VALUES {','.join(['(?, ?, ?)'] * len(chunk))} "
                       "ON CONFLICT(trace_id) DO UPDATE SET owner = excluded.owner, claimed_at = excluded.claimed_at "
                       "WHERE run_claims.owner = excluded.owner OR run_claims.claimed_at < ? RETURNING trace_id")
                params = [value for trace_id in chunk for value in (trace_id, owner, now)] + [now - hold_seconds]
                claimed.update(row[0] for row in s.execute(sql, params))
        return claimed

    def prune(self, now: float | None = None) -> int:
        """Delete runs past ``retention_days`` and beyond ``max_rows`` (at most ``prune_batch`` per
        call, oldest first) and stale pending outcomes; how many runs went."""
        now = time.time() if now is None else now
        with self._db.session(write=True) as s:
            (count,) = s.execute("SELECT COUNT(*) FROM diagnoses").fetchone()
            doomed = min(max(count - self.max_rows, 0), self.prune_batch)
            if self.retention_days is not None:
                (expired,) = s.execute("SELECT COUNT(*) FROM (SELECT 1 FROM diagnoses WHERE diagnosed_at < ? LIMIT ?) e",
                                       (now - self.retention_days * 86_400, self.prune_batch)).fetchone()
                doomed = max(doomed, expired)
            if doomed:
                oldest = "SELECT trace_id FROM diagnoses ORDER BY diagnosed_at LIMIT ?"
                for table in ("diagnosis_modes", "run_steps", "run_spans", "diagnoses"):
                    s.execute(f"DELETE FROM {table} WHERE trace_id IN ({oldest})", (doomed,))
            if self.retention_days is not None:
                s.execute("DELETE FROM judge_verdicts WHERE stored_at < ?", (now - self.retention_days * 86_400,))
            self._prune_pending(s)
            s.execute("DELETE FROM run_claims WHERE claimed_at < ?", (now - 3600,))  # runs claimed an hour ago are stored
            # records parked an hour ago: their run was diagnosed before they came (or never came)
            s.execute("DELETE FROM parked_log_records WHERE parked_at < ?", (now - 3600,))
            s.execute("DELETE FROM web_logouts WHERE expires_at <= ?", (int(now),))
        return doomed

    def _prune_pending(self, s: Session) -> int:
        """Drop pending outcomes older than the TTL, then the oldest beyond ``max_pending``."""
        self._pending_since_prune = 0
        expired = s.execute("DELETE FROM pending_outcomes WHERE received_at < ?",
                            (time.time() - self.pending_ttl_seconds,)).rowcount
        over = s.execute(
            "DELETE FROM pending_outcomes WHERE trace_id IN "
            "(SELECT trace_id FROM pending_outcomes ORDER BY received_at DESC LIMIT ? OFFSET ?)",
            (_ALL_ROWS, self.max_pending)).rowcount
        return expired + over

    def set_outcome(self, trace_id: str, outcome: str, score: float | None = None) -> Diagnosis | None:
        """Record a diagnosed run's outcome; ``None`` when the run is not in the store."""
        with self._db.session(write=True) as s:
            cur = s.execute("UPDATE diagnoses SET outcome = ?, score = COALESCE(?, score) WHERE trace_id = ?", (outcome, score, trace_id))
            if not cur.rowcount:
                return None
            row = s.execute(f"{_SELECT} WHERE trace_id = ?", (trace_id,)).fetchone()
        return _diagnosis(row) if row else None

    def put_pending_outcome(self, trace_id: str, outcome: str, score: float | None = None) -> None:
        """Keep an outcome that arrived before its run was diagnosed."""
        with self._db.session(write=True) as s:
            s.execute(_UPSERT_PENDING, (trace_id, outcome, score, time.time()))
            self._pending_since_prune += 1
            if self._pending_since_prune >= min(self.prune_every, self.max_pending):
                self._prune_pending(s)
            (self._pending_outcomes,) = s.execute("SELECT COUNT(*) FROM pending_outcomes").fetchone()

    def take_pending_outcome(self, trace_id: str) -> tuple[str, float | None] | None:
        return self.take_pending_outcomes([trace_id]).get(trace_id)

    def take_pending_outcomes(self, trace_ids: Sequence[str]) -> dict[str, tuple[str, float | None]]:
        """The outcomes kept for ``trace_ids`` (removed from the store): one query per 500 runs."""
        if not trace_ids or (not self.shared and not self._pending_outcomes):
            return {}
        taken: dict[str, tuple[str, float | None]] = {}
        fresh_after = time.time() - self.pending_ttl_seconds
        with self._db.session(write=True) as s:
            for chunk in _chunks(list(trace_ids)):
                marks = ",".join("?" * len(chunk))
                rows = s.execute(f"SELECT trace_id, outcome, score, received_at FROM pending_outcomes "
                                 f"WHERE trace_id IN ({marks})", chunk).fetchall()
                if not rows:
                    continue
                # only what was read: an outcome another replica posts meanwhile stays for the next look
                s.executemany("DELETE FROM pending_outcomes WHERE trace_id = ? AND received_at = ?",
                              [(t, received) for t, _, _, received in rows])
                self._pending_outcomes = max(0, self._pending_outcomes - len(rows))
                taken.update((t, (outcome, score)) for t, outcome, score, received in rows if received >= fresh_after)
        return taken

    # --- log records parked for the replica that holds their run (a shared store) -----------------
    def park_log_records(self, records: Sequence[tuple[str, str, str]]) -> None:
        """Keep GenAI log records (trace id, span id, the event as JSON) whose span never reached
        this replica, for the replica that diagnoses their run."""
        if records:
            now = time.time()
            with self._db.session(write=True) as s:
                s.executemany("INSERT INTO parked_log_records (trace_id, span_id, record, parked_at) VALUES (?, ?, ?, ?)",
                              [(t, span, record, now) for t, span, record in records])

    def take_parked_log_records(self, trace_ids: Sequence[str]) -> dict[str, list[tuple[str, str]]]:
        """The records parked for ``trace_ids`` (removed from the store), by trace: (span id, event JSON)
        in the order they were parked. One indexed query per 500 runs."""
        taken: dict[str, list[tuple[str, str]]] = {}
        if not trace_ids:
            return taken
        with self._db.session(write=True) as s:
            for chunk in _chunks(list(trace_ids)):
                marks = ",".join("?" * len(chunk))
                rows = s.execute(f"SELECT trace_id, span_id, record, parked_at FROM parked_log_records "
                                 f"WHERE trace_id IN ({marks}) ORDER BY parked_at", chunk).fetchall()
                if not rows:
                    continue
                s.executemany("DELETE FROM parked_log_records WHERE trace_id = ? AND parked_at <= ?",
                              [(t, max(r[3] for r in rows if r[0] == t)) for t in {r[0] for r in rows}])
                for trace_id, span_id, record, _ in rows:
                    taken.setdefault(trace_id, []).append((span_id, record))
        return taken

    def ping(self) -> None:
        """A trivial write session: raises ``errors`` when the store cannot take writes at all."""
        with self._db.session(write=True) as s:
            s.execute("SELECT 1").fetchone()

    # --- the judge's verdicts -----------------------------------------------------------------
    def judge_verdict(self, key: str) -> str | None:
        with self._db.session() as s:
            row = s.execute("SELECT assessment FROM judge_verdicts WHERE cache_key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put_judge_verdict(self, key: str, assessment: str) -> None:
        with self._db.session(write=True) as s:
            s.execute(_UPSERT_VERDICT, (key, assessment, time.time()))

    # --- web sessions logged out ---------------------------------------------------------------
    def revoke_session(self, cookie_hash: str, expires_at: int) -> None:
        """Record a logout until the session would have expired; logouts past their expiry go."""
        with self._db.session(write=True) as s:
            s.execute("DELETE FROM web_logouts WHERE expires_at <= ?", (int(time.time()),))
            s.execute("INSERT INTO web_logouts (cookie_hash, expires_at) VALUES (?, ?) ON CONFLICT(cookie_hash) "
                      "DO UPDATE SET expires_at = excluded.expires_at", (cookie_hash, expires_at))

    def session_revoked(self, cookie_hash: str) -> bool:
        with self._db.session(api=True) as s:
            return s.execute("SELECT 1 FROM web_logouts WHERE cookie_hash = ?", (cookie_hash,)).fetchone() is not None

    # --- reading ------------------------------------------------------------------------------
    def get(self, trace_id: str) -> Diagnosis | None:
        with self._db.session(api=True) as s:
            row = s.execute(f"{_SELECT} WHERE trace_id = ?", (trace_id,)).fetchone()
        return _diagnosis(row) if row else None

    def steps(self, trace_id: str) -> StepList | None:
        """The run's stored step list, or ``None`` when none was kept."""
        with self._db.session(api=True) as s:
            row = s.execute("SELECT steps FROM run_steps WHERE trace_id = ?", (trace_id,)).fetchone()
        return parse_steps(row[0]) if row else None

    def spans(self, trace_id: str) -> str | None:
        """The run's stored spans (``span_codec`` JSON), or ``None`` when none were kept."""
        with self._db.session() as s:
            row = s.execute("SELECT spans FROM run_spans WHERE trace_id = ?", (trace_id,)).fetchone()
        return row[0] if row else None

    def recent_steps(self, limit: int) -> list[list[RunStep]]:
        """The step lists of the ``limit`` most recently diagnosed runs."""
        sql = ("SELECT s.steps FROM run_steps s JOIN diagnoses d ON d.trace_id = s.trace_id "
               "ORDER BY d.diagnosed_at DESC LIMIT ?")
        with self._db.session(api=True) as s:
            rows = s.execute(sql, (limit,)).fetchall()
        return [parse_steps(row[0]) for row in rows]

    def exists(self, trace_id: str) -> bool:
        with self._db.session() as s:
            return s.execute("SELECT 1 FROM diagnoses WHERE trace_id = ?", (trace_id,)).fetchone() is not None

    def existing(self, trace_ids: Iterable[str]) -> set[str]:
        """Those of ``trace_ids`` that have a stored diagnosis (one query per 500 ids)."""
        found: set[str] = set()
        with self._db.session() as s:
            for chunk in _chunks(list(trace_ids)):
                sql = f"SELECT trace_id FROM diagnoses WHERE trace_id IN ({','.join('?' * len(chunk))})"
                found.update(row[0] for row in s.execute(sql, chunk))
        return found

    def accounting(self, trace_id: str) -> Accounting:
        with self._db.session() as s:
            return _accounting(s, trace_id)

    def latest(self, trace_id: str) -> tuple[Diagnosis, Accounting] | None:
        """The run's diagnosis and its metric accounting, read together."""
        with self._db.session() as s:
            row = s.execute(f"SELECT {', '.join(_COLUMNS[1:])} FROM diagnoses WHERE trace_id = ?", (trace_id,)).fetchone()
        if row is None:
            return None
        return _diagnosis((trace_id, *row[:-1])), Accounting.from_json(row[-1])

    def query(
        self, *, model: str | None = None, agent: str | None = None, mode: str | None = None, outcome: str | None = None,
        service: str | None = None, since: float | datetime | None = None, until: float | datetime | None = None,
        fatal: bool | None = None, limit: int = 50, offset: int = 0, trace_ids: Sequence[str] | None = None,
    ) -> list[Diagnosis]:
        """Diagnoses matching every given filter, newest first. ``since``/``until`` bound the run's start;
        ``trace_ids`` (a session's turns) limits the runs to those."""
        where, params = _filters(model, agent, mode, outcome, service, since, until, fatal, trace_ids)
        sql = f"{_SELECT}{where} ORDER BY diagnosed_at DESC, trace_id LIMIT ? OFFSET ?"
        with self._db.session(api=True) as s:
            rows = s.execute(sql, (*params, limit, offset)).fetchall()
        return [_diagnosis(r) for r in rows]

    def count(
        self, *, model: str | None = None, agent: str | None = None, mode: str | None = None, outcome: str | None = None,
        service: str | None = None, since: float | datetime | None = None, until: float | datetime | None = None,
        fatal: bool | None = None, trace_ids: Sequence[str] | None = None,
    ) -> int:
        """How many diagnoses ``query`` would page through with the same filters."""
        where, params = _filters(model, agent, mode, outcome, service, since, until, fatal, trace_ids)
        with self._db.session(api=True) as s:
            return s.execute(f"SELECT COUNT(*) FROM diagnoses{where}", params).fetchone()[0]

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
        per_model = f"WITH w AS ({window}) SELECT model, COUNT(*), {_PER_MODEL_SUMS} FROM w GROUP BY model"
        per_mode = (f"WITH w AS ({window}) SELECT w.model, m.mode, w.outcome, COUNT(*) FROM w "
                    "JOIN diagnosis_modes m ON m.trace_id = w.trace_id GROUP BY w.model, m.mode, w.outcome")
        with self._db.session(api=True) as s:
            models = [ModelCounts(*row) for row in s.execute(per_model, params)]
            modes = [ModeCounts(*row) for row in s.execute(per_mode, params)]
        return models, modes

    def model_counts_page(self, *, since: float | datetime | None = None, until: float | datetime | None = None,
                          model: str | None = None, unnamed: bool = False, limit: int = 50,
                          offset: int = 0) -> ModelCountsPage:
        """:meth:`counts` over every run started in [``since``, ``until``), with every model
        together and only ``limit`` models from ``offset`` (busiest first; ``model``, or with
        ``unnamed`` the runs that named none, alone): grouped, ordered and cut in SQL, so the
        answer is as small with 48,000 models as with 5."""
        where, params = _filters(None, None, None, None, None, since, until, None)
        window = f"WITH w AS (SELECT trace_id, model, outcome, fatal, mode_count FROM diagnoses{where})"
        known = _sum("outcome IN ('success', 'failure')", "1")
        chosen, chosen_params = "", []
        if unnamed:
            chosen = " WHERE model IS NULL"
        elif model is not None:
            chosen, chosen_params = " WHERE model = ?", [model]
        with self._db.session() as s:
            total_row = s.execute(f"{window} SELECT COUNT(*), {_PER_MODEL_SUMS}, COUNT(DISTINCT model), "
                                  "CAST(SUM(CASE WHEN model IS NULL THEN 1 ELSE 0 END) AS BIGINT) FROM w", params).fetchone()
            runs, successes, failures, fatal_runs, in_failed, distinct, unnamed_runs = (v or 0 for v in total_row)
            total_modes = [ModeCounts(None, *row) for row in s.execute(
                f"{window} SELECT m.mode, w.outcome, COUNT(*) FROM w JOIN diagnosis_modes m ON m.trace_id = w.trace_id "
                "GROUP BY m.mode, w.outcome", params)]
            page = [ModelCounts(*row) for row in s.execute(
                f"{window} SELECT model, COUNT(*), {_PER_MODEL_SUMS} FROM w{chosen} GROUP BY model "
                f"ORDER BY {known} DESC, COUNT(*) DESC, COALESCE(model, '') LIMIT ? OFFSET ?",
                [*params, *chosen_params, limit, offset])]
            modes: list[ModeCounts] = []
            named = [c.model for c in page if c.model is not None]
            for group in _chunks(named):
                modes += [ModeCounts(*row) for row in s.execute(
                    f"{window} SELECT w.model, m.mode, w.outcome, COUNT(*) FROM w JOIN diagnosis_modes m "
                    f"ON m.trace_id = w.trace_id WHERE w.model IN ({', '.join('?' * len(group))}) "
                    "GROUP BY w.model, m.mode, w.outcome", [*params, *group])]
            if any(c.model is None for c in page):
                modes += [ModeCounts(None, *row) for row in s.execute(
                    f"{window} SELECT m.mode, w.outcome, COUNT(*) FROM w JOIN diagnosis_modes m "
                    "ON m.trace_id = w.trace_id WHERE w.model IS NULL GROUP BY m.mode, w.outcome", params)]
        return ModelCountsPage(ModelCounts(None, runs, successes, failures, fatal_runs, in_failed), total_modes, page,
                               modes, distinct + (1 if unnamed_runs else 0))

    def close(self) -> None:
        self._db.close()


_ALL_ROWS = 2**62  # LIMIT for "every row": SQLite has no LIMIT ALL, PostgreSQL no LIMIT -1


def _sum(condition: str, value: str) -> str:
    """A conditional sum both databases count as an integer."""
    return f"CAST(SUM(CASE WHEN {condition} THEN {value} ELSE 0 END) AS BIGINT)"


_PER_MODEL_SUMS = ", ".join((_sum("outcome = 'success'", "1"), _sum("outcome = 'failure'", "1"), "CAST(SUM(fatal) AS BIGINT)",
                             _sum("outcome = 'failure'", "mode_count")))


def _chunks(ids: list[str], size: int = 500) -> Iterator[list[str]]:
    for i in range(0, len(ids), size):
        yield ids[i:i + size]


def _accounting(s: Session, trace_id: str) -> Accounting:
    row = s.execute("SELECT accounting FROM diagnoses WHERE trace_id = ?", (trace_id,)).fetchone()
    return Accounting.from_json(row[0] if row else None)


def _filters(model, agent, mode, outcome, service, since, until, fatal, trace_ids=None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if trace_ids is not None:
        clauses.append(f"trace_id IN ({', '.join('?' * len(trace_ids))})" if trace_ids else "1 = 0")
        params.extend(trace_ids)
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
    start = "COALESCE(started_ns, CAST(diagnosed_at * 1e9 AS BIGINT))"
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
