"""Sessions as an output of diagnoses: each diagnosed run that carries a session or conversation
id is a turn; the session is diagnosed again over all its turns as each one arrives.

``export`` (on the sweeper thread) only reads the run's session id and, for a turn, encodes its
spans and queues them (charged to the memory account); a run without one costs nothing more. A
worker thread takes the queued turns in batches and, in one transaction per batch, keeps them in
the :class:`ConversationStore`, reads back which turns their sessions keep (those other replicas
received too; only the turns this process does not hold parsed are read, and on a store this
process alone writes, a session whose turns it holds is not read at all), runs
``diagnose_session`` once per session over its turns in start order and keeps the diagnoses; it
then counts each (session, mode) once, across replicas. A session is open while turns arrive and completes after
``sessions.quiet_seconds`` without one; this process holds at most ``sessions.max_open_sessions``
open (the one quiet longest is completed early) and the store at most ``sessions.max_turns``
turns of each (the oldest are dropped and the diagnosis says so).

With a judge configured (``judge.judge_sessions``), a session of two turns or more is offered to
it (``on_complete``) when this replica marks it completed; the judge's workers read its turns
back (:meth:`SessionTracker.session_turns`) and keep their findings
(:meth:`SessionTracker.apply_judge_findings`), so the worker never waits on the judge.
"""

from __future__ import annotations

import itertools
import logging
import sys
import threading
import time
from collections import OrderedDict, deque
from operator import attrgetter
from typing import Callable, Mapping, NamedTuple, Sequence

from mast_otel.processors import taxonomy
from mast_otel.processors.config import SessionsConfig
from mast_otel.processors.conversations.diagnose import diagnose_session
from mast_otel.processors.conversations.ids import session_id_of
from mast_otel.processors.conversations.model import SessionFinding, Turn
from mast_otel.processors.conversations.settings import SessionDetectionConfig
from mast_otel.processors.model import Run, Span
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.store.conversations import ConversationStore, TurnIndex, TurnRow
from mast_otel.processors.service.memory.account import MemoryAccount
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.outputs.base import Batch
from mast_otel.processors.service.store.span_codec import parse_spans, spans_json

log = logging.getLogger(__name__)

# what one open session's entry costs this process besides its id: the ordered dict's slot and
# link, the float, the revision's slot (tracemalloc: about 190 bytes); the id is charged by its size
_OPEN_SESSION_BYTES = 200
MAX_QUEUED_TURNS = 10_000
MAX_BATCH = 256  # turns the worker stores and diagnoses together
MAX_SESSION_ID_CHARS = 512  # a longer id is not one a conversation carries: the run is not grouped
_start_ns = attrgetter("start_ns")
SessionDiagnoseFn = Callable[[Sequence[Turn], SessionDetectionConfig], "list[SessionFinding]"]


class QueuedTurn(NamedTuple):
    session_id: str
    trace_id: str
    started_ns: int
    service_name: str | None
    spans: str  # span_codec JSON
    run: Run  # the run as diagnosed (the worker need not parse its own turn back)
    nbytes: int  # what it is charged: its stored form plus the per-span overhead


class HeldTurn(NamedTuple):
    length: int  # of its stored form: another replica's newer version of the turn differs
    run: Run
    nbytes: int
    started_ns: int  # as stored (what orders the session's turns)


def open_session_bytes(session_id: str) -> int:
    """What holding ``session_id`` open costs (ids are at most ``MAX_SESSION_ID_CHARS`` long)."""
    return _OPEN_SESSION_BYTES + sys.getsizeof(session_id)


def turn_text(run: Run, max_bytes: int) -> str:
    """The run's spans as the store keeps a turn, in at most ``max_bytes``: all of them when they
    fit, else the earliest that fit with the root kept first (a turn too long is still a turn)."""
    spans: list[Span] = [*run.spans, *run.wrappers]
    text = spans_json(spans)
    if len(text) <= max_bytes:
        return text
    root = [run.root] if run.root is not None else []
    rest = [s for s in run.spans if s is not run.root]
    keep = len(rest)
    while keep > 0:
        keep //= 2
        text = spans_json([*root, *rest[:keep]])
        if len(text) <= max_bytes:
            return text
    return spans_json(root)


class SessionTracker(Lifecycle):
    """Groups diagnosed runs into sessions (the ``sessions`` exporter)."""

    name = "sessions"
    # on a store this process alone writes, the turns held of a session are what the store keeps of
    # it, so their index is not read back (TurnWriter.keep_turns's ``known``); off (tests): read
    known_indexes = True

    def __init__(self, store: ConversationStore, config: SessionsConfig, metrics: Metrics,
                 memory: MemoryAccount | None = None, *, in_memory_store: bool = False,
                 wall_clock: Callable[[], float] = time.time, retry_seconds: float = 1.0,
                 severity_overrides: Mapping[str, str] | None = None, span_overhead_bytes: int = 650) -> None:
        self.store = store
        self.diagnose: SessionDiagnoseFn = diagnose_session  # the session-level detection (tests pass their own)
        # called with a completed session's id when the judge reads sessions (never blocks)
        self.on_complete: Callable[[str], object] | None = None
        self._overrides = dict(severity_overrides or {})
        self.config = config
        self.metrics = metrics
        self._wall = wall_clock
        self._retry_seconds = retry_seconds
        self._queue: deque[QueuedTurn] = deque()
        self._cond = threading.Condition()
        self._open: OrderedDict[str, float] = OrderedDict()  # session id -> wall time of its latest turn here
        self._open_bytes = 0  # what _open (and the revisions, keyed alike) cost, ids included
        self._busy = False
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.revisions: dict[str, int] = {}  # session id -> revision this process last kept (bounded like _open)
        self._memory = memory
        self._charge = memory.charge("sessions_queue") if memory is not None else None
        self._mode_labels: dict[str, tuple[str, str, str]] = {}
        self._span_overhead = span_overhead_bytes
        # open sessions' turns as parsed runs, least recently active session first (sessions.max_held_bytes)
        self._held: OrderedDict[str, dict[str, HeldTurn]] = OrderedDict()
        self._held_bytes = 0
        self._closing: dict[str, int | None] = {}  # sessions let go, not yet marked completed -> their turns held
        # the in-memory database's size, read by the worker after each write (admission reads it per
        # request, and must not wait for the database's lock)
        self._store_bytes = store.held_bytes() if in_memory_store else 0
        self._in_memory_store = in_memory_store
        if memory is not None:
            memory.register("sessions_open", lambda: self._open_bytes + self._held_bytes)
            if in_memory_store:
                memory.register("sessions_store", lambda: self._store_bytes)

    # --- the sweeper's side ------------------------------------------------------------------------
    def export(self, batch: Batch) -> None:
        turns = []
        for item in batch.runs:
            run = item.run
            if item.change != "diagnosis" or run is None:
                continue
            session_id = session_id_of(run)
            if not session_id:
                continue
            if len(session_id) > MAX_SESSION_ID_CHARS or "\x00" in session_id:
                self.metrics.session_turns_dropped_total.labels("unusable_id").inc()
                log.warning("run %s has a session id no store can key (%d characters%s); not grouped", run.trace_id,
                            len(session_id), ", a NUL character" if "\x00" in session_id else "")
                continue
            text = turn_text(run, self.config.max_turn_bytes)
            turns.append(QueuedTurn(session_id, run.trace_id, min(map(_start_ns, run.spans), default=0),
                                    run.service_name, text, run, len(text) + len(run.spans) * self._span_overhead))
        if turns:
            self._enqueue(turns)

    def _enqueue(self, turns: list[QueuedTurn]) -> None:
        with self._cond:
            # the account's room read once (it sums every holder), less what each turn queued here adds
            room = self._memory.room() if self._memory is not None else 1 << 62
            for turn in turns:
                reason = None
                if len(self._queue) >= MAX_QUEUED_TURNS:
                    reason = "queue_full"
                elif room <= 0:
                    reason = "over_budget"
                if reason is not None:
                    self.metrics.session_turns_dropped_total.labels(reason).inc()
                    log.warning("turn %s of session %s not grouped (%s); its run's own diagnosis is kept",
                                turn.trace_id, turn.session_id, reason)
                    continue
                self._queue.append(turn)
                room -= turn.nbytes
                if self._charge is not None:
                    self._charge.add(turn.nbytes)
            self._cond.notify()

    # --- the worker ------------------------------------------------------------------------------
    def _start(self) -> None:
        self._thread = threading.Thread(target=self._work, name="mast-sessions", daemon=True)
        self._thread.start()

    def _shutdown(self, timeout: float) -> None:
        self.flush(timeout)
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued turn is in its session's diagnosis (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
        return True

    def _work(self) -> None:
        tick = min(1.0, self.config.quiet_seconds / 2)
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    if not self._cond.wait(tick):
                        break
                if self._stopping and not self._queue:
                    return
                batch = list(itertools.islice(self._queue, MAX_BATCH))
                self._busy = bool(batch)
            try:
                if batch:
                    self._add_batch(batch)
                self.complete_quiet()
            except self.store.errors as exc:  # kept queued (charged) and tried again
                self.metrics.store_errors_total.labels("sessions").inc()
                log.warning("the store could not keep sessions' turns (%s: %s); trying again", type(exc).__name__, exc)
                with self._cond:
                    self._busy = False
                    self._cond.wait(self._retry_seconds)
                continue
            with self._cond:
                for turn in batch:  # the queue only grows at its end: the batch is its start
                    self._queue.popleft()
                    if self._charge is not None:
                        self._charge.add(-turn.nbytes)
                self._busy = False
                self._cond.notify_all()

    def _add_batch(self, batch: list[QueuedTurn]) -> None:
        """``add_many``; when it fails for a reason other than the store, each session on its own
        (one bad session must not cost the others their diagnosis)."""
        try:
            self.add_many(batch)
            return
        except self.store.data_errors:  # a value the store refuses: each turn alone, the refused one dropped
            if len(batch) == 1:
                self.metrics.session_turns_dropped_total.labels("refused").inc()
                log.exception("the store refused turn %s of session %s; not grouped", batch[0].trace_id, batch[0].session_id)
                return
            for turn in batch:
                self._add_batch([turn])
            return
        except self.store.errors:
            raise
        except Exception:  # (a diagnosis that fails is caught per session in add_many: this is anything else)
            if len({t.session_id for t in batch}) == 1:
                self.metrics.finish_errors_total.labels("sessions").inc()
                log.exception("grouping the turns of session %s failed; not grouped", batch[0].session_id)
                return
        by_session: dict[str, list[QueuedTurn]] = {}
        for turn in batch:
            by_session.setdefault(turn.session_id, []).append(turn)
        for turns in by_session.values():
            self._add_batch(turns)

    def add(self, turn: QueuedTurn) -> int | None:
        """Keep ``turn``, diagnose its session over every stored turn and count what is new; the
        session's revision when this diagnosis was kept (``None``: another replica's covers more)."""
        return self.add_many([turn]).get(turn.session_id)

    def add_many(self, batch: Sequence[QueuedTurn]) -> dict[str, int | None]:
        """:meth:`add` for several turns, in one transaction: the turns stored, which turns each
        session keeps read back, each session diagnosed once over all its turns (those this process
        holds parsed are not read again), the diagnoses kept; each session's revision. A session
        whose diagnosis fails keeps its turns, undiagnosed, and costs the others nothing."""
        now = self._wall()
        over = self._memory is not None and self._memory.over()  # the account read once a batch: it sums every holder
        by_session: dict[str, list[QueuedTurn]] = {}
        for turn in batch:
            by_session.setdefault(turn.session_id, []).append(turn)
        known = None
        if self.known_indexes and not self.store.shared and self._held:
            known = {session_id: [(t, h.started_ns) for t, h in self._held[session_id].items()]
                     for session_id in by_session if session_id in self._held}
        try:
            with self.store.writing() as writer:
                indexes = writer.keep_turns([TurnRow(t.session_id, t.trace_id, t.started_ns, t.service_name, t.spans)
                                             for t in batch], now, known)
                saves = []
                for session_id, (runs, dropped) in self._turns(by_session, indexes, writer.turn_texts_of, over).items():
                    try:
                        findings = self.diagnose([Turn(session_id, run) for run in runs], self.config.detection)
                    except Exception:  # a detector's bug: this session's turns are kept, undiagnosed; the others go on
                        self.metrics.finish_errors_total.labels("sessions").inc()
                        log.exception("diagnosing session %s failed; its turns are kept", session_id)
                        continue
                    saves.append((session_id, findings, len(runs) + dropped, ["", *sorted({f.mode for f in findings})]))
                results = writer.save_diagnoses(saves, now)
        except BaseException:  # rolled back: what _turns held of these sessions may not be stored
            for session_id in by_session:
                self._release(session_id)
            raise
        dropped_now = sum(index.dropped_now for index in indexes.values())
        if dropped_now:
            self.metrics.session_turns_dropped_total.labels("max_turns").inc(dropped_now)
        revisions: dict[str, int | None] = {}
        early: list[str] = []
        counts: dict[tuple[str | None, str], int] = {}
        room = self._open_room(over)
        for (session_id, _, _, _), (revision, claimed) in zip(saves, results):
            service_name = by_session[session_id][-1].service_name
            for key in claimed:
                counts[(service_name, key)] = counts.get((service_name, key), 0) + 1
            early.extend(self._opened(session_id, now, room))
            revisions[session_id] = revision
            if revision is not None:
                self.revisions[session_id] = revision
        for (service_name, key), n in counts.items():
            self._count(service_name, [key], n)
        self._complete_now(early, now)
        self.metrics.sessions_open.set(len(self._open))
        if self._in_memory_store:
            self._store_bytes = self.store.held_bytes()
        return revisions

    def _turns(self, new: dict[str, list[QueuedTurn]], indexes: Mapping[str, TurnIndex],
               read: Callable[[list[tuple[str, str]]], dict[tuple[str, str], str]],
               over: bool) -> dict[str, tuple[list[Run], int]]:
        """Each session's kept turns in start order, as runs, and how many older ones were dropped:
        those held parsed reused, the new turns' own runs as diagnosed, the others (another
        replica's, or let go) read back from the store in one read for all the sessions."""
        held_by_session: dict[str, dict[str, HeldTurn]] = {}
        missing: list[tuple[str, str]] = []
        for session_id, turns in new.items():
            held = self._held.pop(session_id, {})
            self._held_bytes -= sum(h.nbytes for h in held.values())
            for turn in turns:
                held[turn.trace_id] = HeldTurn(len(turn.spans), turn.run, turn.nbytes, turn.started_ns)
            index = indexes.get(session_id)
            entries = index.turns if index is not None else []
            missing.extend((session_id, t) for t, _, length in entries  # length -1: the store says none changed
                           if t not in held or (length >= 0 and held[t].length != length))
            held_by_session[session_id] = held
        texts = read(missing) if missing else {}
        out: dict[str, tuple[list[Run], int]] = {}
        for session_id, held in held_by_session.items():
            index = indexes.get(session_id)
            entries, dropped = (index.turns, index.dropped) if index is not None else ([], 0)
            for trace_id, started_ns, _ in entries:
                text = texts.get((session_id, trace_id))
                if text is not None:
                    spans = parse_spans(text)
                    held[trace_id] = HeldTurn(len(text), Run.from_spans(trace_id, spans, completion="root_ended"),
                                              len(text) + len(spans) * self._span_overhead, started_ns)
            kept = {t for t, _, _ in entries}
            held = {t: h for t, h in held.items() if t in kept}
            self._hold(session_id, held, over)
            out[session_id] = ([held[t].run for t, _, _ in entries if t in held], dropped)
        return out

    def _hold(self, session_id: str, held: dict[str, HeldTurn], over: bool) -> None:
        """Keep the session's parsed turns (most recently active last) within sessions.max_held_bytes
        and an eighth of the memory budget. Held turns are a cache of the store: a session of one
        turn (most runs, when every run carries an id of its own) is not held, and nothing is held
        while the account is over its budget, so sessions never keep the receivers refusing spans."""
        limit = self.config.max_held_bytes
        if self._memory is not None:
            limit = 0 if over else min(limit, self._memory.budget // 8)
        if len(held) > 1:
            self._held[session_id] = held
            self._held_bytes += sum(h.nbytes for h in held.values())
        while self._held_bytes > limit and self._held:
            _, gone = self._held.popitem(last=False)
            self._held_bytes -= sum(h.nbytes for h in gone.values())

    def _release(self, session_id: str) -> None:
        gone = self._held.pop(session_id, None)
        if gone:
            self._held_bytes -= sum(h.nbytes for h in gone.values())

    def _count(self, service_name: str | None, claimed: list[str], times: int = 1) -> None:
        service = self.metrics.bounded("service", service_name)
        for key in claimed:
            if key == "":
                self.metrics.sessions_total.labels(service).inc(times)
            else:
                self.metrics.session_failure_mode_total.labels(service, key, *self._mode(key)).inc(times)

    def _mode(self, mode: str) -> tuple[str, str, str]:
        labels = self._mode_labels.get(mode)
        if labels is None:
            info = taxonomy.get(mode)
            labels = self._mode_labels[mode] = (info.name, info.category, taxonomy.severity(mode, self._overrides))
        return labels

    def _opened(self, session_id: str, now: float, room: int) -> list[str]:
        """Mark the session open now; the sessions that must complete early for it (:meth:`_complete_now`)."""
        if session_id not in self._open:
            self._open_bytes += open_session_bytes(session_id)
        self._open[session_id] = now
        self._open.move_to_end(session_id)
        early = []
        while len(self._open) > self.config.max_open_sessions:
            early.append(self._complete_early("max_open_sessions"))
        while self._open_bytes > room and len(self._open) > 1:
            early.append(self._complete_early("memory"))
        return early

    def _open_room(self, over: bool) -> int:
        """What open sessions may hold: an eighth of the memory budget, a sixteenth while the
        account is over it (a flood of new session ids gives way to spans rather than refusing them)."""
        if self._memory is None:
            return 1 << 62
        return self._memory.budget // (16 if over else 8)

    def _complete_early(self, reason: str) -> str:
        """Let go of the session quiet longest, ``reason`` being that this process holds too many
        (``max_open_sessions``) or their bytes pass their share of the memory budget (``memory``);
        its id, for :meth:`_complete_now` (closed early: a later turn opens it again)."""
        oldest, _ = self._open.popitem(last=False)
        self._open_bytes -= open_session_bytes(oldest)
        self.revisions.pop(oldest, None)
        self._closing[oldest] = self._turns_held(oldest)
        self._release(oldest)
        self.metrics.sessions_completed_early_total.labels(reason).inc()
        return oldest

    def _complete_now(self, session_ids: list[str], now: float) -> None:
        """Mark the sessions let go early completed in the store, in one transaction, and offer
        those marked to the judge."""
        if not session_ids:
            return
        try:
            marked = self.store.complete_many(session_ids, None, now)
        finally:
            closing = {session_id: self._closing.pop(session_id, None) for session_id in session_ids}
        for session_id in session_ids:
            if session_id in marked:  # this replica marked it (another's newer turn keeps it open there)
                self._completed(session_id, closing[session_id])

    def complete_quiet(self) -> list[str]:
        """Complete the sessions quiet for ``sessions.quiet_seconds``; their ids."""
        now = self._wall()
        quiet_before = now - self.config.quiet_seconds
        done = []
        for session_id, last in self._open.items():
            if last > quiet_before:
                break
            done.append(session_id)
        marked = self.store.complete_many(done, quiet_before, now) if done else set()  # failing: all kept open
        for session_id in done:
            del self._open[session_id]
            self._open_bytes -= open_session_bytes(session_id)
            self.revisions.pop(session_id, None)
            turns = self._turns_held(session_id)
            self._release(session_id)
            if session_id in marked:  # this replica marked it (another's newer turn keeps it open there)
                self._completed(session_id, turns)
        room, before = self._open_room(self._memory is not None and self._memory.over()), len(self._open)
        early = []
        while self._open_bytes > room and len(self._open) > 1:  # the account filled since the last turn
            early.append(self._complete_early("memory"))
        self._complete_now(early, now)
        if done or len(self._open) != before:
            self.metrics.sessions_open.set(len(self._open))
        return done

    def _turns_held(self, session_id: str) -> int | None:
        held = self._held.get(session_id)
        return len(held) if held is not None else None

    def _completed(self, session_id: str, turns_held: int | None) -> None:
        """Offer a session of two turns or more to the judge (its turns counted from those held, else the store's index)."""
        if self.on_complete is None:
            return
        turns = turns_held if turns_held is not None else len(self.store.turn_index(session_id)[0])
        if turns >= 2:
            self.on_complete(session_id)

    # --- the judge's side (its worker threads) ----------------------------------------------------
    def session_turns(self, session_id: str, limit: int) -> list[Turn]:
        """The session's latest ``limit`` kept turns in start order, read back from the store (none
        when the store cannot be read: the session is not judged this time)."""
        try:
            index, _ = self.store.turn_index(session_id)
            wanted = [t for t, _, _ in index[-limit:]]
            texts = self.store.turn_texts(session_id, wanted)
        except self.store.errors as exc:
            self.metrics.store_errors_total.labels("sessions").inc()
            log.warning("the store could not give the judge session %s's turns (%s: %s); not judged",
                        session_id, type(exc).__name__, exc)
            return []
        return [Turn(session_id, Run.from_spans(t, parse_spans(texts[t]), completion="root_ended"))
                for t in wanted if t in texts]

    def apply_judge_findings(self, session_id: str, findings: Sequence[SessionFinding]) -> int | None:
        """Keep the judge's findings in the session's diagnosis (in place of its earlier ones) and
        count each (session, mode) not counted before; the revision (``None``: the session is gone)."""
        try:
            revision, claimed, service_name = self.store.save_judge_findings(session_id, findings, self._wall())
        except self.store.errors as exc:
            self.metrics.store_errors_total.labels("sessions").inc()
            log.warning("the store could not keep the judge's findings on session %s (%s: %s); they are lost",
                        session_id, type(exc).__name__, exc)
            return None
        self._count(service_name, claimed)
        return revision

    @property
    def open_sessions(self) -> list[str]:
        return list(self._open)
