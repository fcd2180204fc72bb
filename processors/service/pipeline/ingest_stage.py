"""The ingest stage: decoded spans in, completed runs out to the merge stage.

Receivers call :meth:`IngestStage.admission` (backpressure) and :meth:`IngestStage.ingest`. A
sweeper thread completes runs (see ``assembler``), runs the rule detectors on them and hands
them to the :class:`~mast_otel.processors.service.pipeline.merge.MergeStage`, which merges findings,
decides what the metrics count and feeds the exporters (store, metrics, OTLP, judge trigger,
webhook). Detectors are constructor arguments (defaulting to
``mast_otel.processors.detectors``), so tests and benchmarks can plug in their own.
"""

from __future__ import annotations

import collections
import json
import logging
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from mast_otel.processors import detectors
from mast_otel.processors.config import DetectionConfig, ProcessorConfig
from mast_otel.processors.hints import arrival, derive_hints, qualify
from mast_otel.processors.ingest.decode import DecodeResult, WireSpan
from mast_otel.processors.model import Diagnosis, Finding, Run, Span
from mast_otel.processors.service.memory.admission import BytesInFlight, bytes_in_flight_limit, per_peer_limit
from mast_otel.processors.service.pipeline.assembler import Assembler, Completed, LiveObserver
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.memory.account import MemoryAccount
from mast_otel.processors.service.pipeline.merge import MergeStage, normalize_outcome, reconcile  # noqa: F401  (re-exported)
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.telemetry.refusal_log import RefusalLog, dropped_detail
from mast_otel.processors.service.outputs.base import DiagnosisExporter
from mast_otel.processors.service.outputs.callback import CallbackExporter, Listener
from mast_otel.processors.service.outputs.metrics import MetricsExporter
from mast_otel.processors.service.outputs.otlp import OTLPExporter
from mast_otel.processors.service.outputs.store import StoreExporter
from mast_otel.processors.service.pipeline.partial_success import LATE_DROPPED, drop_details, export_response
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from mast_otel.processors.service.wal import Appended, Recovered, SpanLog, WALError

from mast_otel.processors.service.wal.records import JSON, LOG_KINDS, LOGS_JSON, LOGS_PROTOBUF, PROTOBUF
from mast_otel.processors.service.pipeline import log_join as J
from mast_otel.processors.ingest.log_records import LogBatch, LogEvent
from mast_otel.processors.tools.content_memo import remembering
from mast_otel.processors.ingest.normalize.events import Event

if TYPE_CHECKING:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

log = logging.getLogger(__name__)

DiagnoseFn = Callable[[Run, DetectionConfig], "list[Finding]"]


@dataclass(frozen=True)
class Refusal:
    """Why ingest is refused right now; receivers map it to 429/503 or RESOURCE_EXHAUSTED/UNAVAILABLE."""

    reason: str  # "over_budget" | "shutting_down" | "bytes_in_flight" | "peer_limit" | "wal_log_full" | "wal_no_space" | "wal_io_error"
    retry_after_seconds: int
    message: str

    @property
    def unavailable(self) -> bool:
        """503 / UNAVAILABLE (shutting down, the log cannot take it) rather than 429 / RESOURCE_EXHAUSTED."""
        return self.reason == "shutting_down" or self.reason.startswith("wal_")


@dataclass(frozen=True, slots=True)
class Receipt:
    """What ingest did with a request: refused (nothing buffered), or buffered and logged at
    ``position`` (0: no log), to be acknowledged once that position is durable."""

    refusal: Refusal | None = None
    position: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # spans dropped here by reason, for the partial-success answer


class IngestStage(Lifecycle):
    """Ingest, assembly and the sweeper; ``exporters`` default to the store (when given) and metrics."""

    name = "ingest"

    def __init__(
        self,
        config: ProcessorConfig,
        metrics: Metrics,
        store: DiagnosisStore | None = None,
        exporters: Sequence[DiagnosisExporter] | None = None,
        *,
        diagnose: DiagnoseFn | None = None,
        live_detection: Callable[[DetectionConfig], LiveObserver] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        wal: SpanLog | None = None,
        memory: MemoryAccount | None = None,
    ) -> None:
        diagnose = diagnose or detectors.diagnose
        if live_detection is None:
            # what derivation decides of a tool call as it arrives (its kind, whether it stays a step) done
            # then: live trackers read what the diagnosis reads, so it can reuse their work (``hints.arrival``)
            arrive = arrival(config.hints)
            live_detection = lambda detection: detectors.LiveDetection(detection, arrival=arrive)  # noqa: E731
        self.config = config
        self.metrics = metrics
        self.refusal_log = RefusalLog(config.receiver.refusal_log_seconds)
        self.store = store
        if exporters is None:
            exporters = [*([StoreExporter(store, metrics)] if store is not None else []), MetricsExporter(metrics, config.detection)]
        self.exporters = list(exporters)
        self.wal = wal
        self._store_out = next((e for e in self.exporters if isinstance(e, StoreExporter)), None)
        counter = next((e for e in self.exporters if isinstance(e, MetricsExporter)), None)
        # The store decides when a run is counted, where a restart would diagnose (and count) a run
        # again: with the log on. Without it a restart loses the run, so it is counted at diagnosis.
        if (wal is not None and self._store_out is not None and counter is not None
                and self.exporters.index(self._store_out) < self.exporters.index(counter)):
            self._store_out.count_later = counter.export
        self._unsettled: dict[str, int] = {}  # runs the store has not taken yet -> their settle position
        self._forwarders = [e for e in self.exporters if isinstance(e, OTLPExporter)]
        self._diagnose = diagnose
        # the built-in diagnosis reuses the live trackers' work (an injected one is called as given)
        self._reuses_live = diagnose is detectors.diagnose
        self._clock = clock
        self._wall = wall_clock
        detection = config.detection
        live_factory = (lambda: live_detection(detection)) if detection.live else None
        self._assembler = Assembler(config.assembly, live_factory, on_live_error=self._live_error,
                                    on_forget=self._release if wal is not None else None,
                                    held_elsewhere=lambda: self.memory.held() - self._assembler.held_bytes)
        self._lock = threading.Lock()  # guards the assembler
        self.merge = MergeStage(config, metrics, self.exporters, self, self._rules,
                                durable=store if self._store_out is not None else None, wall_clock=wall_clock,
                                logged=wal is not None)
        self._stopping = False
        self._refusing = False  # the host's shutdown has begun: new requests are refused, the sweeper goes on
        self._started_at = clock()
        # everything held for senders, against assembly.max_buffered_bytes (see memory.py)
        self.memory = memory if memory is not None else MemoryAccount(config.assembly.max_buffered_bytes)
        # bodies being read and decoded, shared by both receivers (see admission.py)
        self.request_bytes = BytesInFlight(bytes_in_flight_limit(config), metrics.request_bytes_in_flight.set,
                                           per_peer_limit(config), room=self.memory.room,
                                           budget=self.memory.budget, make_room=self._make_room)
        self.memory.register("assembly", lambda: self._assembler.held_bytes)
        self.memory.register("request_bodies", lambda: self.request_bytes.held)
        self.memory.register("decoding", lambda: self.request_bytes.decoding)  # a body's decode, beyond its bytes
        self.memory.register("deferred_runs", lambda: self.merge.deferred_bytes)
        self.memory.register("remembered_runs", lambda: self.merge.remembered_bytes)
        # GenAI log records held for spans not here yet (see log_join.py)
        self.log_join = J.LogJoin(config.receiver.decode.content_chars, config.assembly.max_bytes_per_trace)
        self.memory.register("log_records", lambda: self.log_join.held_bytes)
        self._drop_details = drop_details(config.assembly)
        self._sweeper: threading.Thread | None = None
        self._wake = threading.Event()

    # --- ingest (called by receivers) --------------------------------------------------------
    @property
    def decode_options(self):
        from mast_otel.processors.ingest.decode import DecodeOptions

        return DecodeOptions(keep_raw=bool(self._forwarders), pending_events=self.log_join.pending,
                             **self.config.receiver.decode.model_dump())

    def admission(self) -> Refusal | None:
        """``None`` when a new export request may be accepted."""
        retry = self.config.receiver.retry_after_seconds
        if self._stopping or self._refusing:
            return Refusal("shutting_down", retry, "the processor is shutting down; retry")
        if self.memory.over() and not self._shed_retained():
            return Refusal("over_budget", retry, "the processor is over its memory budget; retry later")
        if self.wal is not None and self.wal.full():
            return Refusal("wal_log_full", retry, "the write-ahead log is full of runs in flight; retry later")
        if self.wal is not None and self.wal.fault is not None:
            return Refusal("wal_io_error", retry, f"the write-ahead log is at fault ({self.wal.fault}); retry later")
        return None

    def _shed_retained(self) -> bool:
        """Forget retained runs (they only serve late spans) until the account is back under
        ``eviction_target`` of the budget; whether it is under the budget now."""
        memory = self.memory
        with self._lock:
            self._assembler.shed_retained(int(memory.held() - memory.budget * self.config.assembly.eviction_target))
        held = memory.held()
        self.metrics.buffered_bytes.set(held)
        return held < memory.budget

    def _make_room(self, nbytes: int) -> None:
        """Forget retained runs until ``nbytes`` more fit the account (a body's decode asks)."""
        memory = self.memory
        short = nbytes - memory.room()
        if short > 0:
            with self._lock:
                self._assembler.shed_retained(short)
            self.metrics.buffered_bytes.set(memory.held())

    def ingest(self, result: DecodeResult, protocol: str, body: bytes | None = None, *, as_json: bool = False) -> Receipt:
        """Log ``body`` (the request as received, when the write-ahead log is on), then buffer the
        ``DecodeResult``'s spans and count what happened to them. A request the log cannot take
        is refused and nothing of it is buffered. The receipt names the spans dropped here
        (per-trace caps, late spans past retention) by reason."""
        m = self.metrics
        wal = self.wal if body is not None and result.spans else None  # nothing accepted: nothing to keep
        diagnosed_before = self._diagnosed_before(result.spans)
        with self._lock:
            if self._stopping:  # a request slower than the host's drain: the final flush is done or under way
                return Receipt(self.admission())
            if wal is not None and body is not None:
                try:
                    appended = wal.append(JSON if as_json else PROTOBUF, body, self._wall())
                except WALError as exc:
                    return Receipt(self._wal_refusal(exc))
                self._assembler.position = appended.position
            if diagnosed_before:
                self._assembler.mark_diagnosed(diagnosed_before)
            report = self._assembler.add(result.spans, self._clock(), result.wire)
            joined = self._join_held(result) if self.log_join.pending else 0
            if wal is not None:
                self._hold(appended, result.spans)
            in_flight = len(self._assembler.in_flight)
        if joined:
            m.log_records_joined_total.inc(joined)
        if report.accepted:
            m.spans_received_total.labels(protocol).inc(report.accepted)
        if report.duplicates:
            m.duplicate_spans_total.labels(protocol).inc(report.duplicates)
        for reason, count in (*result.rejected.items(), *report.dropped.items()):
            m.spans_rejected_total.labels(reason).inc(count)
        if report.late_rediagnosed:
            m.late_spans_total.labels("rediagnosed").inc(report.late_rediagnosed)
        if report.late_dropped:
            m.late_spans_total.labels("dropped").inc(report.late_dropped)
        for hit in report.live:
            # the model as the diagnosis will name it (a span's own name is folded at diagnosis)
            labels = m.run_labels(hit.service_name, hit.agent, self.config.hints.model_name(hit.model))
            m.live_detections_total.labels(*labels, hit.finding.mode).inc()
        m.traces_in_flight.set(in_flight)
        m.buffered_bytes.set(self.memory.held())
        if report.evicted:
            self._wake.set()
        if report.passthrough:
            for forwarder in self._forwarders:
                forwarder.forward(report.passthrough)
        dropped = dict(report.dropped)
        if report.late_dropped:
            dropped[LATE_DROPPED] = report.late_dropped
        return Receipt(position=appended.position if wal is not None else 0, dropped=dropped)

    # --- log records (GenAI events sent as OTLP logs, joined to their spans; see log_join.py) ------
    def ingest_logs(self, batch: LogBatch, protocol: str, body: bytes | None = None, *, as_json: bool = False) -> Receipt:
        """Log ``body`` (when the write-ahead log is on and the request holds GenAI records), then
        join each record to its span or hold it for the span, and count what became of every record.
        The receipt names the records dropped here by reason, for the partial-success answer."""
        m = self.metrics
        wal = self.wal if body is not None and batch.events else None
        outcome = J.Outcome()
        with self._lock:
            if self._stopping:
                return Receipt(self.admission())
            if wal is not None and body is not None:
                try:
                    appended = wal.append(LOGS_JSON if as_json else LOGS_PROTOBUF, body, self._wall())
                except WALError as exc:
                    return Receipt(self._wal_refusal(exc))
                self._assembler.position = appended.position
            self._join_records(batch.events, self._clock(), outcome)
            if wal is not None and outcome.holding:
                wal.hold(appended.segment, appended.position, sorted(outcome.holding))
        m.log_records_received_total.labels(protocol).inc(batch.records)
        if outcome.joined:
            m.log_records_joined_total.inc(outcome.joined)
        dropped = dict(outcome.dropped)
        for reason, n in ((J.NOT_GENAI, batch.not_genai), (J.NO_SPAN_ID, batch.no_span_id),
                          (J.INVALID, sum(batch.rejected.values())), *dropped.items()):
            if n:
                m.log_records_dropped_total.labels(reason).inc(n)
        m.buffered_bytes.set(self.memory.held())
        if batch.no_span_id:
            dropped[J.NO_SPAN_ID] = batch.no_span_id
        return Receipt(position=appended.position if wal is not None else 0, dropped=dropped)

    def _join_records(self, records: Sequence[LogEvent], now: float, outcome: J.Outcome) -> None:
        """Each record to its span when it is buffered, else held for it (under the lock)."""
        if not records:
            return
        assembler, join = self._assembler, self.log_join
        room = max(0, int(self.memory.budget - self.memory.held()))
        late: dict[tuple[str, str], list[LogEvent]] = {}
        for record in records:
            buf = assembler.in_flight.get(record.trace_id)
            if buf is not None and record.span_id in buf.span_ids:
                late.setdefault((record.trace_id, record.span_id), []).append(record)
            elif buf is None and assembler.diagnosed(record.trace_id):
                outcome.drop(J.RUN_ALREADY_DIAGNOSED)
            else:
                join.hold(record, now, room, outcome)
                room -= record.size
        by_id: dict[str, dict[str, Span]] = {}
        for (trace_id, span_id), found in late.items():
            buf = assembler.in_flight[trace_id]
            spans = by_id.get(trace_id)
            if spans is None:
                spans = by_id[trace_id] = {s.span_id: s for s in buf.spans}
            span = spans.get(span_id)
            if span is None:  # remembered as a link, not kept (a span past the trace's caps)
                outcome.drop(J.SPAN_NEVER_CAME, len(found))
                continue
            if not join.apply(span, [r.event for r in found]):
                outcome.drop(J.NORMALIZE_FAILED, len(found))
                continue
            size = sum(r.size for r in found)
            buf.nbytes += size
            assembler.buffered_bytes += size
            outcome.joined += len(found)
            outcome.holding.add(trace_id)

    def _join_held(self, result: DecodeResult) -> int:
        """The records held for this request's spans, taken out of the holding: those the decode
        did not read (they came in between) are added to their span now. How many (under the lock)."""
        join, in_flight = self.log_join, self._assembler.in_flight
        joined = 0
        for span in result.spans:
            if not join.holds(span.trace_id):
                continue
            events, size = join.take(span.trace_id, span.span_id)
            if not events:
                continue
            seen = result.joined.get((span.trace_id, span.span_id), 0)
            if len(events) > seen and not join.apply(span, events[seen:]):
                self.metrics.log_records_dropped_total.labels(J.NORMALIZE_FAILED).inc(len(events) - seen)
                events = events[:seen]
            buf = in_flight.get(span.trace_id)
            if buf is not None:
                buf.nbytes += size
                self._assembler.buffered_bytes += size
            joined += len(events)
        return joined

    @property
    def _parks_records(self) -> bool:
        """Records whose span never came here go to the shared store for the replica holding their run."""
        return self.store is not None and self.store.shared

    def _drop_held_records(self, done: Sequence[Completed], now: float) -> tuple[list[str], list[tuple[str, str, str]]]:
        """Records whose span cannot come any more: their run was diagnosed, or no span of their
        trace came within ``idle_timeout_seconds``; with a shared store, no span came here within
        ``grace_seconds``, and they are returned to be parked. Returns the traces let go and the
        records to park (under the lock)."""
        join = self.log_join
        never = sum(join.drop_trace(c.buffer.trace_id) for c in done)
        parks = self._parks_records
        wait = self.config.assembly.grace_seconds if parks else self.config.assembly.idle_timeout_seconds
        stale = join.stale(now, wait, self._assembler.in_flight)
        parked: list[tuple[str, str, str]] = []
        for trace_id in stale:
            if parks:
                parked += [(trace_id, span_id, json.dumps(event)) for span_id, events in join.take_trace(trace_id).items()
                           for event in events]
            else:
                never += join.drop_trace(trace_id)
        if never:
            self.metrics.log_records_dropped_total.labels(J.SPAN_NEVER_CAME).inc(never)
        return stale, parked

    def _park(self, stale: list[str], parked: list[tuple[str, str, str]]) -> None:
        """Park records in the shared store (outside the lock), then let the log go of them."""
        if parked:
            try:
                self.store.park_log_records(parked)  # type: ignore[union-attr]  # parked only with a store
                self.metrics.log_records_parked_total.inc(len(parked))
            except Exception as exc:
                log.warning("could not park %d log record(s) in the shared store (%s); dropped", len(parked), exc)
                self.metrics.log_records_dropped_total.labels(J.SPAN_NEVER_CAME).inc(len(parked))
        if stale and self.wal is not None:  # no run will settle them: their records may leave the log
            self.wal.settle(stale, self.wal.position)
            self.wal.release(stale)

    def _join_parked(self, done: Sequence[Completed]) -> None:
        """Records another replica parked for runs completed here, added to their spans before the
        diagnosis (a shared store: one indexed query per batch of completed runs)."""
        try:
            parked = self.store.take_parked_log_records([c.buffer.trace_id for c in done])  # type: ignore[union-attr]
        except Exception as exc:
            log.warning("could not read parked log records from the shared store (%s)", exc)
            return
        if not parked:
            return
        joined = dropped = 0
        for c in done:
            records = parked.get(c.buffer.trace_id)
            if not records:
                continue
            spans = {s.span_id: s for s in c.buffer.spans}
            by_span: dict[str, list[Event]] = {}
            for span_id, text in records:
                name, attrs = json.loads(text)
                by_span.setdefault(span_id, []).append((name, attrs))
            for span_id, events in by_span.items():
                span = spans.get(span_id)
                if span is None:
                    dropped += len(events)
                    continue
                self.log_join.apply(span, events)
                joined += len(events)
        if joined:
            self.metrics.log_records_joined_total.inc(joined)
        if dropped:
            self.metrics.log_records_dropped_total.labels(J.SPAN_NEVER_CAME).inc(dropped)

    def answer_logs(self, batch: LogBatch, dropped: dict[str, int], protocol: str,
                    client: str | None) -> ExportLogsServiceResponse | None:
        """The OTLP partial-success answer for a logs request (``None``: every record kept or
        knowingly ignored): records over the decode bounds, without a span id, or dropped here."""
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

        counts = collections.Counter(batch.rejected)
        counts.update({reason: n for reason, n in dropped.items() if n})
        total = sum(counts.values())
        if not total:
            return None
        summary = ", ".join(f"{reason}={n}" for reason, n in sorted(counts.items()))
        details = "; ".join(batch.messages)
        response = ExportLogsServiceResponse()
        response.partial_success.rejected_log_records = total
        response.partial_success.error_message = f"rejected {total} log record(s) ({summary})" + (f": {details}" if details else "")
        self.refusal_log.refused(protocol, "partial_success", client, "partial success", dropped_detail(dict(counts)))
        return response

    def _diagnosed_before(self, spans: Sequence[Span]) -> set[str]:
        """Runs of ``spans`` new to this process that the store diagnosed before it started: late
        spans that cannot be merged (the run's spans are no longer held), dropped and named in
        the partial-success answer. Asked only within ``retention_seconds`` of the start: later,
        any such run is past retention, as it would be without a restart. A store that keeps
        runs' spans (the shared one) merges such spans instead, as it merges re-routed halves."""
        if (self.store is None or self.store.keeps_spans
                or self._clock() - self._started_at > self.config.assembly.retention_seconds):
            return set()
        fresh = self._assembler.unknown(spans)
        if not fresh:
            return set()
        try:
            return self.store.existing(fresh)
        except Exception as exc:  # a store that cannot be read must not stop ingest
            log.debug("could not ask the store for runs diagnosed before the start (%s)", exc)
            return set()

    def answer(self, result: DecodeResult, dropped: dict[str, int]) -> ExportTraceServiceResponse | None:
        """The OTLP partial-success answer for a request (``None``: every span kept)."""
        return export_response(result.rejected, result.messages, dropped, self._drop_details)

    def bytes_refusal(self) -> Refusal:
        return Refusal("bytes_in_flight", self.config.receiver.retry_after_seconds,
                       "too many request bytes are being received at once (receiver.max_bytes_in_flight); retry later")

    def decode_refusal(self) -> Refusal:
        """No room in the memory account to decode a body this large now (see ``decode_cost``)."""
        return Refusal("bytes_in_flight", self.config.receiver.retry_after_seconds,
                       "the memory budget has no room to decode a body this large now (assembly.max_buffered_bytes); retry later")

    def peer_refusal(self) -> Refusal:
        return Refusal("peer_limit", self.config.receiver.retry_after_seconds,
                       "this client address has as many requests arriving as it may (receiver.grpc_workers); retry later")

    def _release(self, trace_id: str) -> None:
        """The assembler forgot a diagnosed run: the log may let its spans go once settled."""
        if self.wal is not None:  # registered only with a log
            self.wal.release((trace_id,))

    def _hold(self, appended: Appended, spans: Sequence[Span], *, restored: bool = False) -> None:
        """Tell the log which runs its new record holds: those buffered or about to be diagnosed,
        or, for spans ``restored`` at replay, the diagnosed runs retained with them."""
        assembler = self._assembler
        evicted = assembler.evicted_at(appended.position)
        held = [t for t in {span.trace_id for span in spans}
                if t in assembler.in_flight or t in evicted or (restored and t in assembler.retained)]
        if held and self.wal is not None:
            self.wal.hold(appended.segment, appended.position, held)

    def durable(self, receipt: Receipt) -> Refusal | None:
        """Block until the request behind ``receipt`` is durable per the fsync policy (gRPC threads)."""
        if receipt.refusal is not None or not receipt.position or self.wal is None:
            return receipt.refusal
        error = self.wal.wait(receipt.position)
        return None if error is None else self._wal_refusal(error)

    async def durable_async(self, receipt: Receipt) -> Refusal | None:
        """The same on the HTTP receiver's event loop (concurrent requests share one fsync)."""
        if receipt.refusal is not None or not receipt.position or self.wal is None:
            return receipt.refusal
        error = await self.wal.wait_async(receipt.position)
        return None if error is None else self._wal_refusal(error)

    def _wal_refusal(self, error: WALError) -> Refusal:
        return Refusal(f"wal_{error.reason}", self.config.receiver.retry_after_seconds, str(error))

    def refused(self, refusal: Refusal, protocol: str, client: str | None = None) -> None:
        """Count (and log, rate-limited) a request refused for ``refusal``."""
        self.metrics.ingest_refused_requests_total.labels(protocol, refusal.reason).inc()
        if protocol == "http":
            status = "503" if refusal.unavailable else "429"
        else:
            status = "UNAVAILABLE" if refusal.unavailable else "RESOURCE_EXHAUSTED"
        self.refusal_log.refused(protocol, refusal.reason, client, status, refusal.message)

    def answer_logged(self, result: DecodeResult, dropped: dict[str, int], protocol: str,
                      client: str | None) -> ExportTraceServiceResponse | None:
        """:meth:`answer`, and a (rate-limited) log line when it names spans not kept."""
        response = self.answer(result, dropped)
        if response is not None:
            counts = collections.Counter(result.rejected)
            counts.update(dropped)
            self.refusal_log.refused(protocol, "partial_success", client, "partial success", dropped_detail(dict(counts)))
        return response

    # --- lifecycle -----------------------------------------------------------------------------
    def _start(self) -> None:
        self._stopping = False
        if self.wal is not None:
            self.wal.start()  # started by the host already; here for stages used on their own
            self._replay(self.wal)
        self._started_at = self._clock()  # the store's runs are asked about from here: a long replay uses none of it
        self._sweeper = threading.Thread(target=self._sweep_loop, name="mast-otel-sweeper", daemon=True)
        self._sweeper.start()

    def refuse_new(self) -> None:
        """Refuse new export requests (503 / UNAVAILABLE, ``shutting_down``) while the receivers stay
        open for the host's drain; what is buffered is diagnosed as usual until ``shutdown``."""
        self._refusing = True

    def _shutdown(self, timeout: float) -> None:
        """Refuse new spans and diagnose every buffered run (exporters drain in their own shutdown)."""
        self._stop_sweeper(timeout)
        with self._lock:
            done = self._assembler.drain(self._clock())
        self._finish(done)

    def _stop_sweeper(self, timeout: float) -> None:
        self._stopping = True
        if self._sweeper is not None:
            self._wake.set()
            self._sweeper.join(timeout)
            self._sweeper = None

    def stop(self, flush: bool = True) -> None:
        """Stop; ``flush`` diagnoses every buffered run first (``shutdown`` always does)."""
        if flush:
            self.shutdown()
        else:
            self._stop_sweeper(10.0)
            self._lifecycle_state = "stopped"

    def _sweep_loop(self) -> None:
        interval = self.config.assembly.sweep_interval_seconds
        while not self._stopping:
            self._wake.wait(interval)
            self._wake.clear()
            try:
                self.sweep()
            except Exception:  # keep sweeping; a bad run must not stop diagnosis
                log.exception("sweep failed")

    def sweep(self) -> int:
        """Diagnose every run complete now; returns how many. Also looks after the log's health."""
        if self.wal is not None:
            self.wal.check()
        with self._lock:
            if self.wal is not None:
                pinning = self.wal.pinning()
                self._assembler.evict(pinning, "wal_max_bytes")
                self.wal.release(pinning)  # once their diagnosis is settled, even while retained in memory
            done = self._assembler.due(self._clock())
            stale, parked = self._drop_held_records(done, self._clock()) if self.log_join.pending else ([], [])
            self.metrics.traces_in_flight.set(len(self._assembler.in_flight))
            self.metrics.buffered_bytes.set(self.memory.held())
        if stale:
            self._park(stale, parked)
        self._finish(done)
        if self.wal is not None and self.wal.blocked_kind == "no_space":
            self._give_back_log_space(self.wal)
        return len(done)

    def _give_back_log_space(self, wal: SpanLog) -> None:
        """The log's filesystem is full: the diagnosed runs retained for late spans let go of
        their log segments (their late spans are then named rejected), so the log can write again
        now rather than when their retention ends."""
        with self._lock:
            self._assembler.shed_retained(sys.maxsize)
            self.metrics.buffered_bytes.set(self.memory.held())
        wal.check()

    def _finish(self, done: list[Completed]) -> None:
        """Diagnose and export ``done``, then settle them in the log: each run's diagnosis includes
        every span logged up to its ``through`` (the log position when it completed)."""
        if not done:
            if self.merge.retry_due():  # runs a failed store look-up deferred, on a quiet replica
                self._settle_finished(self.merge.finish([]))
            elif self.wal is not None and self._store_out is not None and self._unsettled:
                self._settle_recovered()  # runs the store's retry timer stored on a quiet replica
            return
        # counted per label value, not per run: ``labels()`` validates and locks on every call
        completions = collections.Counter(c.completion for c in done)
        evictions = collections.Counter(c.evicted_reason for c in done if c.evicted_reason)
        for completion, runs in completions.items():
            self.metrics.traces_completed_total.labels(completion).inc(runs)
        for reason, runs in evictions.items():
            self.metrics.traces_evicted_total.labels(reason).inc(runs)
        if self._parks_records:
            self._join_parked(done)
        self._settle_finished(self.merge.finish(done))

    def _settle_finished(self, done: list[Completed]) -> None:
        """Settle in the log the runs the merge finished (a deferred run stays until it is)."""
        if self.wal is not None and done:
            by_position: dict[int, list[str]] = {}
            for c in done:
                by_position.setdefault(c.through, []).append(c.buffer.trace_id)
            for through, trace_ids in by_position.items():
                self._settle(trace_ids, through)

    def _settle(self, trace_ids: list[str], through: int) -> None:
        """Settle runs in the log once the store (when on) holds their diagnosis: a run whose
        save failed stays in the log until a retry stores it, or a restart diagnoses it again."""
        assert self.wal is not None
        store = self._store_out
        if store is not None:
            self._settle_recovered(through)
            unsaved = store.unsaved
            if unsaved:
                for trace_id in trace_ids:
                    if trace_id in unsaved:
                        self._unsettled[trace_id] = through
                trace_ids = [t for t in trace_ids if t not in unsaved]
                if len(self._unsettled) > 2 * store.MAX_UNSAVED:  # given up on by the store: settled by a restart
                    self._unsettled = {t: p for t, p in self._unsettled.items() if t in unsaved}
        self.wal.settle(trace_ids, through)

    def _settle_recovered(self, through: int | None = None) -> None:
        """Settle in the log the runs a retry stored (or the store set aside) since the last look."""
        assert self.wal is not None and self._store_out is not None
        for trace_id in self._store_out.take_recovered():
            position = self._unsettled.pop(trace_id, through)
            if position is not None:
                self.wal.settle([trace_id], position)

    def _replay(self, wal: SpanLog) -> None:
        """Rebuild the runs in flight from the log before the receivers open, each span at the
        time it was received. Spans a settled diagnosis included rebuild that run as diagnosed
        and retained (not diagnosed again), so its late spans, logged or still to come, revive
        it for a re-diagnosis with every span."""
        from mast_otel.processors.ingest.decode import DecodeError, decode_json, decode_protobuf

        options = self.decode_options
        replayed = records = 0
        started = time.monotonic()
        self._assembler.replaying = True
        try:
            for record in wal.recovered():
                if record.kind in LOG_KINDS:
                    self._replay_logs(record)
                    continue
                try:
                    result = (decode_json if record.kind == JSON else decode_protobuf)(record.payload, options)
                except DecodeError as exc:
                    log.warning("write-ahead log record %d no longer decodes (%s); skipped", record.position, exc)
                    continue
                settled = record.settled
                (done, done_wire), (going, going_wire) = _split(result, lambda s: settled.get(s.trace_id, 0) >= record.position)  # noqa: B023 - _split calls it at once
                received = self._clock() - max(0.0, self._wall() - record.received_at)
                with self._lock:
                    self._assembler.position = record.position
                    if done:
                        self._assembler.restore(done, received, done_wire)
                        self._hold(Appended(record.position, record.segment), done, restored=True)
                    report = self._assembler.add(going, received, going_wire)
                    if self.log_join.pending:
                        self._join_held(result)
                    self._hold(Appended(record.position, record.segment), going)
                replayed += report.accepted
                records += 1
        finally:
            with self._lock:
                self._assembler.replaying = False
                self._assembler.limit_retained()
                self._assembler.expire(self._clock())  # runs whose retention ended before the restart
        if records:
            wal.metrics.replayed_spans_total.inc(replayed)
            self.metrics.traces_in_flight.set(len(self._assembler.in_flight))
            self.metrics.buffered_bytes.set(self.memory.held())
            log.info("replayed %d span(s) from %d write-ahead log record(s) in %.2f s: %d run(s) in flight resume, "
                     "%d diagnosed run(s) retained for late spans", replayed, records, time.monotonic() - started,
                     len(self._assembler.in_flight), len(self._assembler.retained))

    def _replay_logs(self, record: Recovered) -> None:
        """A logs request read back from the log: its records not covered by a settled run are joined again."""
        from mast_otel.processors.ingest.decode import DecodeError
        from mast_otel.processors.ingest.log_records import decode_logs_json, decode_logs_protobuf

        try:
            batch = (decode_logs_json if record.kind == LOGS_JSON else decode_logs_protobuf)(record.payload, self.decode_options)
        except DecodeError as exc:
            log.warning("write-ahead log record %d no longer decodes (%s); skipped", record.position, exc)
            return
        settled = record.settled
        events = [e for e in batch.events if settled.get(e.trace_id, 0) < record.position]
        outcome = J.Outcome()
        with self._lock:
            self._assembler.position = record.position
            self._join_records(events, self._clock(), outcome)
            if outcome.holding and self.wal is not None:
                self.wal.hold(record.segment, record.position, sorted(outcome.holding))

    # --- diagnosis -----------------------------------------------------------------------------
    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(run, diagnosis)`` after each (re)diagnosis, on the sweeper thread, and after an
        outcome change of a run still held, on the caller's thread: keep it quick."""
        self.add_exporter(CallbackExporter(fn))

    def add_exporter(self, exporter: DiagnosisExporter) -> None:
        """Another output of the merge stage (before ``start()``; whoever added it starts it)."""
        self.exporters.append(exporter)
        self.merge.exporters.append(exporter)

    def _live_error(self, exc: BaseException) -> None:
        log.error("live detection failed (%s); live detection is off for that trace", exc)

    def _rules(self, run: Run, live: LiveObserver | None = None) -> list[Finding]:
        try:
            with remembering(run.shortcuts):  # one memo for the run: hints and detectors read the same texts
                derive_hints(run, self.config.hints)
                if self._reuses_live and isinstance(live, detectors.LiveDetection):
                    return qualify(detectors.diagnose(run, self.config.detection, live), run)
                return qualify(self._diagnose(run, self.config.detection), run)
        except Exception:
            log.exception("rule detection failed for trace %s", run.trace_id)
            return []

    # --- reads and typed inputs (the judge, the outcome route, the web view) ---------------------
    def get_run(self, trace_id: str) -> Run | None:
        """A diagnosed run still in the retention window."""
        with self._lock:
            kept = self._assembler.retained.get(trace_id)
            spans = list(kept.spans) if kept is not None else None
        return Run.from_spans(trace_id, spans, completion=kept.completion) if kept is not None and spans is not None else None

    def get_wire(self, trace_id: str) -> dict[str, WireSpan]:
        """The wire forms of a retained run's spans, by span id (empty: re-export off or not held)."""
        with self._lock:
            kept = self._assembler.retained.get(trace_id)
            return dict(kept.wire) if kept is not None else {}

    def apply_findings(self, trace_id: str, findings: list[Finding]) -> Diagnosis | None:
        return self.merge.apply_findings(trace_id, findings)

    def record_outcome(self, trace_id: str, outcome: str, score: float | None = None) -> Diagnosis | None:
        return self.merge.record_outcome(trace_id, outcome, score)

    @property
    def in_flight(self) -> int:
        return len(self._assembler.in_flight)


def _split(result: DecodeResult, first: Callable[[Span], bool]) -> tuple[tuple[list[Span], list[WireSpan]], ...]:
    """A request's spans (and wire forms, when kept) in two parts: those ``first`` picks, the rest."""
    parts: tuple[tuple[list[Span], list[WireSpan]], ...] = (([], []), ([], []))
    for i, span in enumerate(result.spans):
        spans, wire = parts[0 if first(span) else 1]
        spans.append(span)
        if result.wire:
            wire.append(result.wire[i])
    return parts
