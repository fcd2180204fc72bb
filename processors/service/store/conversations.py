"""Conversations in the store: each session's turns (their spans), its latest diagnosis, and
which (session, mode) pairs the metrics counted.

A session's turns are separate traces, and the gateway routes by trace id, so the turns of one
session reach different replicas. Every replica writes the turn it received here first, then
reads the session's turns back and diagnoses them all: the replica whose write came last sees
every turn, and a diagnosis is kept only when it covers at least as many turns as the stored
one, so the session ends with one diagnosis over all its turns whatever replica each reached.
Counting is claimed with an insert that only one replica can make (``conversation_counted``).

These tables live in the diagnosis store's database (SQLite or PostgreSQL); with the store off,
in a SQLite database in memory. (Not the web view's login sessions: ``service/auth/logouts.py``.)
"""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping, NamedTuple, Sequence

from mast_otel.processors.conversations.model import SessionFinding, SpanRef
from mast_otel.processors.service.store.database import Database, Session

_ALL_ROWS = 2**62  # LIMIT for "every row" on both databases
JUDGE = "judge"  # the source of the judge's findings, kept apart from the rules' when either is revised


class TurnRow(NamedTuple):
    session_id: str
    trace_id: str
    started_ns: int
    service_name: str | None
    spans: str  # span_codec JSON


class TurnIndex(NamedTuple):
    """A session's kept turns as :meth:`ConversationStore.keep_turns` found them after its write."""

    turns: list[tuple[str, int, int]]  # (trace id, start, length of the stored spans), in start order
    dropped: int  # older turns dropped so far (sessions.max_turns), these writes' included
    dropped_now: int  # dropped by these writes


class StoredTurn(NamedTuple):
    trace_id: str
    started_ns: int
    spans: str  # span_codec JSON


class SessionRow(NamedTuple):
    """A session's summary and its latest diagnosis."""

    session_id: str
    service_name: str | None
    started_ns: int | None
    last_turn_at: float  # wall clock of its latest turn
    completed_at: float | None
    dropped_turns: int  # oldest turns left out (sessions.max_turns)
    turn_count: int  # turns kept
    revision: int  # diagnoses so far (0: none yet)
    findings: list[SessionFinding]
    diagnosed_at: float | None

    def complete(self, now: float, quiet_seconds: float) -> bool:
        """Completed, or quiet for longer than ``quiet_seconds`` (no replica marked it yet)."""
        return self.completed_at is not None or now - self.last_turn_at >= quiet_seconds


def findings_json(findings: Sequence[SessionFinding]) -> str:
    if not findings:  # most sessions' diagnosis (the encoder's call would cost a turn more than its row)
        return "[]"
    return json.dumps([{"mode": f.mode, "confidence": f.confidence, "explanation": f.explanation,
                        "evidence": [[r.trace_id, r.span_id] for r in f.evidence], "turn_trace_id": f.turn_trace_id,
                        "detector": f.detector, "source": f.source} for f in findings], separators=(",", ":"))


def parse_findings(text: str) -> list[SessionFinding]:
    out = []
    for item in json.loads(text):
        item["evidence"] = tuple(SpanRef(t, s) for t, s in item.get("evidence") or ())
        out.append(SessionFinding(**item))
    return out


_UPSERT_SESSION = (
    "INSERT INTO conversations (session_id, service_name, started_ns, last_turn_at, completed_at, dropped_turns, "
    "diagnosed_turns, revision, mode_count, findings, diagnosed_at) VALUES (?, ?, ?, ?, NULL, 0, 0, 0, 0, '[]', NULL) "
    "ON CONFLICT(session_id) DO UPDATE SET completed_at = NULL, "
    "service_name = COALESCE(conversations.service_name, excluded.service_name), "
    "started_ns = CASE WHEN conversations.started_ns IS NULL OR excluded.started_ns < conversations.started_ns "
    "THEN excluded.started_ns ELSE conversations.started_ns END, "
    "last_turn_at = CASE WHEN excluded.last_turn_at > conversations.last_turn_at "
    "THEN excluded.last_turn_at ELSE conversations.last_turn_at END"
)
# a session new to a store this process alone writes: its row written once, with its first diagnosis
# (what _UPSERT_SESSION then the diagnosis's UPDATE would leave), or without one (_PLAIN_NEW_SESSION)
_NEW_SESSION = (
    "INSERT INTO conversations (session_id, service_name, started_ns, last_turn_at, completed_at, dropped_turns, "
    "diagnosed_turns, revision, mode_count, findings, diagnosed_at) VALUES (?, ?, ?, ?, NULL, ?, ?, 1, ?, ?, ?)"
)
_PLAIN_NEW_SESSION = (
    "INSERT INTO conversations (session_id, service_name, started_ns, last_turn_at, completed_at, dropped_turns, "
    "diagnosed_turns, revision, mode_count, findings, diagnosed_at) VALUES (?, ?, ?, ?, NULL, ?, 0, 0, 0, '[]', NULL)"
)
_UPSERT_TURN = (
    "INSERT INTO conversation_turns (session_id, trace_id, started_ns, spans) VALUES (?, ?, ?, ?) "
    "ON CONFLICT(session_id, trace_id) DO UPDATE SET started_ns = excluded.started_ns, spans = excluded.spans"
)
_SESSION_COLUMNS = ("c.session_id, c.service_name, c.started_ns, c.last_turn_at, c.completed_at, c.dropped_turns, "
                    "(SELECT COUNT(*) FROM conversation_turns t WHERE t.session_id = c.session_id), c.revision, "
                    "c.findings, c.diagnosed_at")


class ConversationStore:
    """Sessions' turns and diagnoses on ``db``; safe from any thread (each call is one transaction)."""

    def __init__(self, db: Database, *, max_turns: int, max_stored_sessions: int, prune_every: int = 500) -> None:
        self._db = db
        self.errors = db.errors
        self.data_errors = db.data_errors
        self.shared = db.shared
        self.max_turns = max_turns
        self.max_stored_sessions = max_stored_sessions
        self.prune_every = prune_every
        self._writes = 0
        self._lock = threading.Lock()

    # --- the pipeline ---------------------------------------------------------------------------
    def add_turn(self, session_id: str, trace_id: str, started_ns: int, service_name: str | None, spans: str,
                 now: float | None = None) -> int:
        """Keep a turn (a re-diagnosed run replaces its turn) and open its session again; the
        session's oldest turns beyond ``max_turns`` are dropped: how many went now."""
        return self.add_turns([TurnRow(session_id, trace_id, started_ns, service_name, spans)], now).get(session_id, 0)

    def add_turns(self, turns: Sequence[TurnRow], now: float | None = None) -> dict[str, int]:
        """:meth:`add_turn` for several turns in one transaction; the turns dropped now, by session."""
        return {session_id: index.dropped_now for session_id, index in self.keep_turns(turns, now).items()
                if index.dropped_now}

    def keep_turns(self, turns: Sequence[TurnRow], now: float | None = None) -> dict[str, TurnIndex]:
        """:meth:`TurnWriter.keep_turns` in a transaction of its own."""
        with self.writing() as writer:
            return writer.keep_turns(turns, now)

    @contextmanager
    def writing(self) -> Iterator[TurnWriter]:
        """One write transaction for a batch of turns: keep them, read what else the sessions
        need, keep their diagnoses (:class:`TurnWriter`); all or nothing."""
        writer = TurnWriter(self)
        with self._db.session(write=True) as s:
            writer.session = s
            yield writer
            writer.write_new_sessions()  # those no diagnosis was saved for
        writer.session = None
        with self._lock:
            self._writes += writer.turns_written
            due = self._writes >= self.prune_every
            if due:
                self._writes = 0
        if due:
            self.prune()

    def turns(self, session_id: str) -> tuple[list[StoredTurn], int]:
        """The session's kept turns in start order, and how many older ones were dropped."""
        with self._db.session() as s:
            rows = s.execute("SELECT trace_id, started_ns, spans FROM conversation_turns WHERE session_id = ? "
                             "ORDER BY started_ns, trace_id", (session_id,)).fetchall()
            row = s.execute("SELECT dropped_turns FROM conversations WHERE session_id = ?", (session_id,)).fetchone()
        return [StoredTurn(*r) for r in rows], (row[0] if row else 0)

    def turn_index(self, session_id: str) -> tuple[list[tuple[str, int, int]], int]:
        """The session's kept turns in start order as (trace id, start, length of the stored
        spans), and how many older ones were dropped: what a caller holding parsed turns needs to
        know which it must read."""
        with self._db.session() as s:
            rows = s.execute("SELECT trace_id, started_ns, LENGTH(spans) FROM conversation_turns WHERE session_id = ? "
                             "ORDER BY started_ns, trace_id", (session_id,)).fetchall()
            row = s.execute("SELECT dropped_turns FROM conversations WHERE session_id = ?", (session_id,)).fetchone()
        return [(t, n, length) for t, n, length in rows], (row[0] if row else 0)

    def turn_texts(self, session_id: str, trace_ids: Sequence[str]) -> dict[str, str]:
        """The stored spans of some of the session's turns."""
        if not trace_ids:
            return {}
        with self._db.session() as s:
            rows = s.execute(f"SELECT trace_id, spans FROM conversation_turns WHERE session_id = ? AND trace_id IN "
                             f"({', '.join('?' * len(trace_ids))})", (session_id, *trace_ids)).fetchall()
        return dict(rows)

    def save_diagnosis(self, session_id: str, findings: Sequence[SessionFinding], covered: int,
                       now: float | None = None, *, claim: Sequence[str] = ()) -> tuple[int | None, list[str]]:
        """Keep the session's diagnosis over ``covered`` turns unless the stored one covers more
        (another replica saw a later turn), and :meth:`claim` ``claim`` in the same transaction:
        its revision (``None`` when it was not kept) and the keys claimed."""
        return self.save_diagnoses([(session_id, findings, covered, claim)], now)[0]

    def save_diagnoses(self, items: Sequence[tuple[str, Sequence[SessionFinding], int, Sequence[str]]],
                       now: float | None = None) -> list[tuple[int | None, list[str]]]:
        """:meth:`save_diagnosis` for several sessions (session id, findings, covered, claim) in one transaction."""
        with self.writing() as writer:
            return writer.save_diagnoses(items, now)

    def save_judge_findings(self, session_id: str, findings: Sequence[SessionFinding],
                            now: float | None = None) -> tuple[int | None, list[str], str | None]:
        """Put the judge's latest findings in place of its earlier ones in the session's diagnosis
        (the rules' findings stay) and claim their modes, in one transaction: the revision
        (``None``: the session is gone), the modes claimed and the session's service."""
        now = time.time() if now is None else now
        with self._db.session(write=True) as s:
            row = s.execute("SELECT findings, service_name FROM conversations WHERE session_id = ?", (session_id,)).fetchone()
            if row is None:
                return None, [], None
            merged = [f for f in parse_findings(row[0]) if f.source != JUDGE] + list(findings)
            s.execute("UPDATE conversations SET findings = ?, revision = revision + 1, diagnosed_at = ? WHERE session_id = ?",
                      (findings_json(merged), now, session_id))
            revision = _set_modes(s, session_id, merged)
            return revision, _claim(s, session_id, sorted({f.mode for f in findings})), row[1]

    def claim(self, session_id: str, keys: Sequence[str]) -> list[str]:
        """Those of ``keys`` (``""`` for the session itself, else a mode) not counted before, now
        marked counted: only one replica can claim a key."""
        with self._db.session(write=True) as s:
            return _claim(s, session_id, keys)

    def complete(self, session_id: str, quiet_before: float | None, now: float | None = None) -> bool:
        """Mark the session completed when its latest turn is older than ``quiet_before`` (another
        replica may hold a newer one); ``None``: whatever its last turn (closed early)."""
        now = time.time() if now is None else now
        sql = "UPDATE conversations SET completed_at = ? WHERE session_id = ? AND completed_at IS NULL"
        params: list[Any] = [now, session_id]
        if quiet_before is not None:
            sql += " AND last_turn_at <= ?"
            params.append(quiet_before)
        with self._db.session(write=True) as s:
            return s.execute(sql, params).rowcount > 0

    def complete_many(self, session_ids: Sequence[str], quiet_before: float | None, now: float | None = None) -> set[str]:
        """:meth:`complete` for several sessions in one transaction; those this call marked."""
        now = time.time() if now is None else now
        lock = " FOR UPDATE" if self.shared else ""
        quiet, params = ("", []) if quiet_before is None else (" AND last_turn_at <= ?", [quiet_before])
        done: list[str] = []
        with self._db.session(write=True) as s:
            for chunk in _chunks(sorted(set(session_ids))):
                found = [r[0] for r in s.execute(
                    f"SELECT session_id FROM conversations WHERE session_id IN ({_marks(chunk)}) AND completed_at IS NULL"
                    f"{quiet} ORDER BY session_id{lock}", (*chunk, *params))]
                if found:
                    s.execute(f"UPDATE conversations SET completed_at = ? WHERE session_id IN ({_marks(found)})",
                              (now, *found))
                    done.extend(found)
        return set(done)

    def prune(self) -> int:
        """Delete the sessions beyond ``max_stored_sessions``, least recently active first."""
        with self._db.session(write=True) as s:
            (count,) = s.execute("SELECT COUNT(*) FROM conversations").fetchone()
            doomed = count - self.max_stored_sessions
            if doomed <= 0:
                return 0
            oldest = "SELECT session_id FROM conversations ORDER BY last_turn_at LIMIT ?"
            for table in ("conversation_turns", "conversation_modes", "conversation_counted", "conversations"):
                s.execute(f"DELETE FROM {table} WHERE session_id IN ({oldest})", (doomed,))
        return doomed

    # --- reading (the API and the web view) -----------------------------------------------------
    def get(self, session_id: str) -> SessionRow | None:
        with self._db.session(api=True) as s:
            row = s.execute(f"SELECT {_SESSION_COLUMNS} FROM conversations c WHERE c.session_id = ?", (session_id,)).fetchone()
        return _session(row) if row else None

    def turn_ids(self, session_id: str) -> list[tuple[str, int]]:
        """The session's kept turns as (trace id, start in ns), in start order."""
        with self._db.session(api=True) as s:
            rows = s.execute("SELECT trace_id, started_ns FROM conversation_turns WHERE session_id = ? "
                             "ORDER BY started_ns, trace_id", (session_id,)).fetchall()
        return [(t, n) for t, n in rows]

    def trace_ids(self, session_id: str) -> list[str]:
        return [t for t, _ in self.turn_ids(session_id)]

    def query(self, *, service: str | None = None, mode: str | None = None, with_modes: bool | None = None,
              since: float | None = None, until: float | None = None, limit: int = 50, offset: int = 0) -> list[SessionRow]:
        """Sessions matching every given filter, most recently active first."""
        where, params = _filters(service, mode, with_modes, since, until)
        with self._db.session(api=True) as s:
            rows = s.execute(f"SELECT {_SESSION_COLUMNS} FROM conversations c{where} "
                             "ORDER BY c.last_turn_at DESC, c.session_id LIMIT ? OFFSET ?", (*params, limit, offset)).fetchall()
        return [_session(r) for r in rows]

    def count(self, *, service: str | None = None, mode: str | None = None, with_modes: bool | None = None,
              since: float | None = None, until: float | None = None) -> int:
        where, params = _filters(service, mode, with_modes, since, until)
        with self._db.session(api=True) as s:
            return s.execute(f"SELECT COUNT(*) FROM conversations c{where}", params).fetchone()[0]

    def held_bytes(self) -> int:
        """Bytes the database holds (what a store in memory charges the memory account)."""
        with self._db.session() as s:
            (pages,) = s.execute("PRAGMA page_count").fetchone()
            (size,) = s.execute("PRAGMA page_size").fetchone()
        return pages * size


class TurnWriter:
    """What :meth:`ConversationStore.writing` gives: a batch's writes and reads in one transaction,
    in a few statements per batch besides a row per session and per turn.

    On a store this process alone writes, a session new to the store has its row written once,
    with its first diagnosis (:meth:`save_diagnoses`), not inserted then updated: every run with
    an id of its own is such a session. ``fold_new_sessions`` off (tests) takes the plain path."""

    fold_new_sessions = True

    def __init__(self, store: ConversationStore) -> None:
        self._store = store
        self.session: Session | None = None
        self.turns_written = 0
        # the sessions' rows as keep_turns found them before its write (a store this process
        # alone writes): session id -> (findings, diagnosed turns, revision)
        self._before: dict[str, tuple[str, int, int]] = {}
        # sessions new to the store whose row waits for their diagnosis: session id ->
        # (service name, earliest start, latest turn's wall time, turns dropped)
        self._new: dict[str, tuple[str | None, int, float, int]] = {}
        self._dropped: dict[str, int] = {}  # those rows' turns dropped so far (sessions.max_turns)

    def write_new_sessions(self) -> None:
        """Write the rows of the new sessions still waiting, as keep_turns would have (undiagnosed)."""
        if self._new:
            new, self._new = self._new, {}
            self._s().executemany(_PLAIN_NEW_SESSION, [(session_id, *row) for session_id, row in sorted(new.items())])

    def _s(self) -> Session:
        if self.session is None:
            raise RuntimeError("a TurnWriter is used only inside ConversationStore.writing()")
        return self.session

    def keep_turns(self, turns: Sequence[TurnRow], now: float | None = None,
                   known: Mapping[str, Sequence[tuple[str, int]]] | None = None) -> dict[str, TurnIndex]:
        """:meth:`ConversationStore.add_turns`, and each of their sessions' turns as kept after it.
        The rows are written together (sorted, so that replicas writing the same sessions lock them
        in one order), the index is one read for every session, and only a session beyond
        ``max_turns`` deletes. The stored spans' lengths (how a held turn that another replica
        rewrote is told) are read only from a shared store: otherwise this process wrote them all.
        On a store this process alone writes, the sessions' rows are read first (what
        :meth:`save_diagnoses` reads too): a session new to the store has only the turns written
        now, so only the others' turns are read back (every run with an id of its own is a new session).
        ``known``: on such a store, sessions whose kept turns the caller holds as (trace id, start),
        as the last write left them: their index is made from those and this write's turns, not read
        (ignored on a shared store, where other replicas write turns too)."""
        s, now = self._s(), time.time() if now is None else now
        sessions: dict[str, tuple[str | None, int]] = {}  # session id -> (its first service named, earliest start)
        latest: dict[tuple[str, str], TurnRow] = {}  # a turn given twice: its later form
        for turn in turns:
            latest[(turn.session_id, turn.trace_id)] = turn
            service, started = sessions.get(turn.session_id, (None, turn.started_ns))
            sessions[turn.session_id] = (service if service is not None else turn.service_name, min(started, turn.started_ns))
        ids = sorted(sessions)
        shared = self._store.shared
        upserted = ids
        if not shared:
            self.write_new_sessions()  # a second write in this transaction finds them stored
            self._before, self._dropped = _session_rows(s, ids)
            if self.fold_new_sessions:
                upserted = [session_id for session_id in ids if session_id in self._before]
                self._new = {session_id: (*sessions[session_id], now, 0) for session_id in ids
                             if session_id not in self._before}
        s.executemany(_UPSERT_SESSION, [(session_id, *sessions[session_id], now) for session_id in upserted])
        s.executemany(_UPSERT_TURN, [(t.session_id, t.trace_id, t.started_ns, t.spans) for _, t in sorted(latest.items())])
        self.turns_written += len(latest)
        if shared:
            index = _turn_indexes(s, ids, lengths=True)
        else:
            stored = [i for i in ids if i in self._before]
            index = _turn_indexes(s, [i for i in stored if i not in known] if known else stored, lengths=False)
            if known:
                self._index_known(index, stored, known, latest.values())
            new = sorted((t.session_id, t.started_ns, t.trace_id) for t in latest.values() if t.session_id not in self._before)
            for session_id, started_ns, trace_id in new:
                entry = index.get(session_id)
                if entry is None:
                    entry = index[session_id] = TurnIndex([], 0, 0)
                    self._before[session_id] = ("[]", 0, 0)  # as the write made it
                entry.turns.append((trace_id, started_ns, -1))
        for session_id, (entries, dropped, _) in list(index.items()):
            extra = len(entries) - self._store.max_turns
            if extra <= 0:
                continue
            gone = [t for t, _, _ in entries[:extra]]
            s.execute(f"DELETE FROM conversation_turns WHERE session_id = ? AND trace_id IN ({_marks(gone)})",
                      (session_id, *gone))
            waiting = self._new.get(session_id)
            if waiting is not None:
                self._new[session_id] = (*waiting[:3], waiting[3] + extra)
            else:
                s.execute("UPDATE conversations SET dropped_turns = dropped_turns + ? WHERE session_id = ?", (extra, session_id))
            index[session_id] = TurnIndex(entries[extra:], dropped + extra, extra)
        return index

    def _index_known(self, index: dict[str, TurnIndex], stored: Sequence[str],
                     known: Mapping[str, Sequence[tuple[str, int]]], written: Iterable[TurnRow]) -> None:
        """The index of each stored session in ``known`` (as :func:`_turn_indexes` would read it,
        before turns beyond ``max_turns`` are dropped): the turns held, with those written now in
        place of their earlier forms, in start order; the turns dropped so far from its row."""
        now_by_session: dict[str, dict[str, int]] = {}
        for turn in written:
            now_by_session.setdefault(turn.session_id, {})[turn.trace_id] = turn.started_ns
        for session_id in stored:
            held = known.get(session_id)
            if held is None:
                continue
            now = now_by_session.get(session_id, {})
            entries = sorted([*((n, t) for t, n in held if t not in now), *((n, t) for t, n in now.items())])
            index[session_id] = TurnIndex([(t, n, -1) for n, t in entries], self._dropped[session_id], 0)

    def turn_texts_of(self, turns: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """The stored spans of (session id, trace id) turns of any sessions, in one read."""
        s, wanted = self._s(), set(turns)
        out: dict[tuple[str, str], str] = {}
        for chunk in _chunks(sorted({t for _, t in wanted})):
            for session_id, trace_id, text in s.execute(
                    f"SELECT session_id, trace_id, spans FROM conversation_turns WHERE trace_id IN ({_marks(chunk)})", chunk):
                if (session_id, trace_id) in wanted:
                    out[(session_id, trace_id)] = text
        return out

    def save_diagnoses(self, items: Sequence[tuple[str, Sequence[SessionFinding], int, Sequence[str]]],
                       now: float | None = None) -> list[tuple[int | None, list[str]]]:
        """:meth:`ConversationStore.save_diagnoses` in this transaction."""
        s, now = self._s(), time.time() if now is None else now
        if len({item[0] for item in items}) < len(items):  # a session twice: each save sees the one before
            self.write_new_sessions()
            return [_save(s, session_id, findings, covered, claim, now) for session_id, findings, covered, claim in items]
        rows_read, self._before = self._before, {}  # read once: these saves change the rows
        if not all(item[0] in rows_read for item in items):
            rows_read = {}
            self.write_new_sessions()
        return _save_many(s, items, now, lock=" FOR UPDATE" if self._store.shared else "", rows_read=rows_read,
                          new=self._new)


def _save(s: Session, session_id: str, findings: Sequence[SessionFinding], covered: int, claim: Sequence[str],
          now: float) -> tuple[int | None, list[str]]:
    """One session's :meth:`ConversationStore.save_diagnosis` in the session ``s``; the judge's
    findings (made when the session last completed) are kept beside the new rule findings."""
    row = s.execute("SELECT findings FROM conversations WHERE session_id = ?", (session_id,)).fetchone()
    judged = [f for f in parse_findings(row[0]) if f.source == JUDGE] if row is not None and JUDGE in row[0] else []
    findings = [*findings, *judged]
    revision = None
    updated = s.execute(
        "UPDATE conversations SET findings = ?, diagnosed_turns = ?, revision = revision + 1, "
        "diagnosed_at = ? WHERE session_id = ? AND diagnosed_turns <= ?",
        (findings_json(findings), covered, now, session_id, covered)).rowcount
    if updated > 0:
        revision = _set_modes(s, session_id, findings)
    claimed = _claim(s, session_id, claim)
    return revision, claimed


def _save_many(s: Session, items: Sequence[tuple[str, Sequence[SessionFinding], int, Sequence[str]]], now: float,
               *, lock: str, rows_read: Mapping[str, tuple[str, int, int]],
               new: dict[str, tuple[str | None, int, float, int]] | None = None) -> list[tuple[int | None, list[str]]]:
    """:func:`_save` for sessions given once each, in a few statements per batch besides one row
    per session kept: their rows read (and, on a shared store, locked: no replica revises or claims
    them until this commits), then the diagnoses that cover at least as many turns as the stored
    ones written, the mode rows rewritten only where the modes changed, the new claims inserted.
    ``rows_read``: the rows as :meth:`TurnWriter.keep_turns` read them in this transaction, before
    its write (every session's, or empty: they are read here). ``new``: the sessions new to the
    store whose row is not written yet (:class:`TurnWriter`); the row of each saved here is written
    with its diagnosis and taken out of ``new``, and nothing is counted for them yet (a session's
    claims go with its row)."""
    new = {} if new is None else new
    ids = sorted({session_id for session_id, _, _, _ in items})
    stored: dict[str, tuple[str, int, int]] = {}
    counted: set[tuple[str, str]] = set()
    if rows_read:
        stored = {session_id: rows_read[session_id] for session_id in ids}
    for chunk in _chunks(ids):
        if not rows_read:
            for session_id, findings_text, diagnosed, revision in s.execute(
                    f"SELECT session_id, findings, diagnosed_turns, revision FROM conversations WHERE session_id IN "
                    f"({_marks(chunk)}) ORDER BY session_id{lock}", chunk):
                stored[session_id] = (findings_text, diagnosed, revision)
        known = [session_id for session_id in chunk if session_id not in new]
        if known:
            counted.update(s.execute(f"SELECT session_id, counted FROM conversation_counted WHERE session_id IN "
                                     f"({_marks(known)})", known).fetchall())
    updates: list[tuple[str, int, float, int, str, int]] = []
    inserts: list[tuple[str, str | None, int, float, int, int, int, str, float]] = []
    modes_now: dict[str, list[str]] = {}
    claims: list[tuple[str, str]] = []
    results: list[tuple[int | None, list[str]]] = []
    for session_id, findings, covered, claim in items:
        revision = None
        row = stored.get(session_id)
        if row is not None and row[1] <= covered:
            before = parse_findings(row[0]) if row[0] != "[]" else []
            kept = [*findings, *(f for f in before if f.source == JUDGE)]
            modes = sorted({f.mode for f in kept})
            waiting = new.pop(session_id, None)
            if waiting is not None:
                service_name, started_ns, last_turn_at, dropped = waiting
                inserts.append((session_id, service_name, started_ns, last_turn_at, dropped, covered, len(modes),
                                findings_json(kept), now))
            else:
                updates.append((findings_json(kept), covered, now, len(modes), session_id, covered))
            if modes != sorted({f.mode for f in before}):
                modes_now[session_id] = modes
            revision = row[2] + 1
        claimed = [key for key in dict.fromkeys(claim) if (session_id, key) not in counted]
        claims.extend((session_id, key) for key in claimed)
        results.append((revision, claimed))
    s.executemany(_NEW_SESSION, inserts)
    s.executemany("UPDATE conversations SET findings = ?, diagnosed_turns = ?, revision = revision + 1, "
                  "diagnosed_at = ?, mode_count = ? WHERE session_id = ? AND diagnosed_turns <= ?", updates)
    changed = sorted(modes_now)
    for chunk in _chunks(changed):
        s.execute(f"DELETE FROM conversation_modes WHERE session_id IN ({_marks(chunk)})", chunk)
    s.executemany("INSERT INTO conversation_modes (session_id, mode) VALUES (?, ?)",
                  [(session_id, mode) for session_id in changed for mode in modes_now[session_id]])
    s.executemany("INSERT INTO conversation_counted (session_id, counted) VALUES (?, ?) "
                  "ON CONFLICT(session_id, counted) DO NOTHING", claims)
    return results


def _session_rows(s: Session, session_ids: Sequence[str]) -> tuple[dict[str, tuple[str, int, int]], dict[str, int]]:
    """The stored rows of those of ``session_ids`` that exist: (findings, diagnosed turns,
    revision), and the turns each has dropped."""
    rows: dict[str, tuple[str, int, int]] = {}
    dropped: dict[str, int] = {}
    for chunk in _chunks(session_ids):
        for session_id, findings_text, diagnosed, revision, dropped_turns in s.execute(
                f"SELECT session_id, findings, diagnosed_turns, revision, dropped_turns FROM conversations WHERE session_id IN "
                f"({_marks(chunk)})", chunk):
            rows[session_id] = (findings_text, diagnosed, revision)
            dropped[session_id] = dropped_turns
    return rows, dropped


def _turn_indexes(s: Session, session_ids: Sequence[str], *, lengths: bool) -> dict[str, TurnIndex]:
    """The kept turns of each of ``session_ids`` (that exist) in start order, in one read per chunk
    (``lengths`` off: each length -1, and the spans, which SQLite keeps on overflow pages, are not read)."""
    index: dict[str, TurnIndex] = {}
    length_of = "LENGTH(t.spans)" if lengths else "-1"
    for chunk in _chunks(session_ids):
        for session_id, dropped, trace_id, started_ns, length in s.execute(
                f"SELECT c.session_id, c.dropped_turns, t.trace_id, t.started_ns, {length_of} FROM conversations c "
                f"JOIN conversation_turns t ON t.session_id = c.session_id WHERE c.session_id IN ({_marks(chunk)}) "
                "ORDER BY c.session_id, t.started_ns, t.trace_id", chunk):
            entry = index.get(session_id)
            if entry is None:
                entry = index[session_id] = TurnIndex([], dropped, 0)
            entry.turns.append((trace_id, started_ns, length))
    return index


_CHUNK = 500  # keys per IN (...): within every SQLite's limit on bound values


def _chunks(keys: Sequence[str]) -> list[Sequence[str]]:
    return [keys[i:i + _CHUNK] for i in range(0, len(keys), _CHUNK)]


def _marks(keys: Sequence[str]) -> str:
    return ", ".join("?" * len(keys))


def _set_modes(s: Session, session_id: str, findings: Sequence[SessionFinding]) -> int:
    """The session's modes (what the mode filters read) from its findings; its revision."""
    modes = sorted({f.mode for f in findings})
    s.execute("UPDATE conversations SET mode_count = ? WHERE session_id = ?", (len(modes), session_id))
    s.execute("DELETE FROM conversation_modes WHERE session_id = ?", (session_id,))
    for mode in modes:
        s.execute("INSERT INTO conversation_modes (session_id, mode) VALUES (?, ?)", (session_id, mode))
    (revision,) = s.execute("SELECT revision FROM conversations WHERE session_id = ?", (session_id,)).fetchone()
    return revision


def _claim(s: Session, session_id: str, keys: Sequence[str]) -> list[str]:
    claimed = []
    for key in keys:
        n = s.execute("INSERT INTO conversation_counted (session_id, counted) VALUES (?, ?) "
                      "ON CONFLICT(session_id, counted) DO NOTHING", (session_id, key)).rowcount
        if n > 0:
            claimed.append(key)
    return claimed


def _filters(service: str | None, mode: str | None, with_modes: bool | None, since: float | None,
             until: float | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if service is not None:
        clauses.append("c.service_name = ?")
        params.append(service)
    if mode is not None:
        clauses.append("c.session_id IN (SELECT session_id FROM conversation_modes WHERE mode = ?)")
        params.append(mode)
    if with_modes is not None:
        clauses.append("c.mode_count > 0" if with_modes else "c.mode_count = 0")
    if since is not None:
        clauses.append("c.last_turn_at >= ?")
        params.append(since)
    if until is not None:
        clauses.append("c.last_turn_at < ?")
        params.append(until)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _session(row: tuple) -> SessionRow:
    (session_id, service_name, started_ns, last_turn_at, completed_at, dropped, turns, revision, findings, diagnosed_at) = row
    return SessionRow(session_id, service_name, started_ns, last_turn_at, completed_at, dropped, turns, revision,
                      parse_findings(findings), diagnosed_at)
