"""The ingest stage: decoded spans in, completed runs out to the merge stage.

Receivers call :meth:`IngestStage.admission` (backpressure) and :meth:`IngestStage.ingest`. A
sweeper thread completes runs (see ``assembler``), runs the rule detectors on them and hands
them to the :class:`~mast_otel.processors.service.merge.MergeStage`, which merges findings,
decides what the metrics count and feeds the exporters (store, metrics, OTLP, judge trigger,
webhook). Detectors are constructor arguments (defaulting to
``mast_otel.processors.detectors``), so tests and benchmarks can plug in their own.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from mast_otel.processors.config import DetectionConfig, ProcessorConfig
from mast_otel.processors.hints import derive_hints, qualify
from mast_otel.processors.ingest.decode import WireSpan
from mast_otel.processors.model import Diagnosis, Finding, Run
from mast_otel.processors.service.admission import BytesInFlight, bytes_in_flight_limit
from mast_otel.processors.service.assembler import Assembler, Completed
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.merge import MergeStage, normalize_outcome, reconcile  # noqa: F401  (re-exported)
from mast_otel.processors.service.metrics import Metrics
from mast_otel.processors.service.outputs.base import DiagnosisExporter
from mast_otel.processors.service.outputs.callback import CallbackExporter, Listener
from mast_otel.processors.service.outputs.metrics import MetricsExporter
from mast_otel.processors.service.outputs.otlp import OTLPExporter
from mast_otel.processors.service.outputs.store import StoreExporter
from mast_otel.processors.service.partial_success import LATE_DROPPED, drop_details, export_response
from mast_otel.processors.service.store import DiagnosisStore

log = logging.getLogger(__name__)

DiagnoseFn = Callable[[Run, DetectionConfig], "list[Finding]"]


@dataclass(frozen=True)
class Refusal:
    """Why ingest is refused right now; receivers map it to 429/503 or RESOURCE_EXHAUSTED/UNAVAILABLE."""

    reason: str  # "over_budget" | "shutting_down" | "bytes_in_flight"
    retry_after_seconds: int
    message: str


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
        live_detection: Callable[[DetectionConfig], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if diagnose is None or live_detection is None:
            from mast_otel.processors import detectors

            diagnose = diagnose or detectors.diagnose
            live_detection = live_detection or detectors.LiveDetection
        self.config = config
        self.metrics = metrics
        self.store = store
        if exporters is None:
            exporters = [*([StoreExporter(store, metrics)] if store is not None else []), MetricsExporter(metrics, config.detection)]
        self.exporters = list(exporters)
        self._ledger = next((e for e in self.exporters if isinstance(e, StoreExporter)), None)
        self._forwarders = [e for e in self.exporters if isinstance(e, OTLPExporter)]
        self._diagnose = diagnose
        self._clock = clock
        detection = config.detection
        live_factory = (lambda: live_detection(detection)) if detection.live else None
        self._assembler = Assembler(config.assembly, live_factory, on_live_error=self._live_error)
        self._lock = threading.Lock()  # guards the assembler
        self.merge = MergeStage(config, metrics, self.exporters, self, self._rules,
                                durable=store if self._ledger is not None else None, wall_clock=wall_clock)
        self._stopping = False
        # bodies being read and decoded, shared by both receivers (see admission.py)
        self.request_bytes = BytesInFlight(bytes_in_flight_limit(config), metrics.request_bytes_in_flight.set)
        self._drop_details = drop_details(config.assembly)
        self._sweeper: threading.Thread | None = None
        self._wake = threading.Event()

    # --- ingest (called by receivers) --------------------------------------------------------
    @property
    def decode_options(self):
        from mast_otel.processors.ingest.decode import DecodeOptions

        return DecodeOptions(keep_raw=bool(self._forwarders), **self.config.receiver.decode.model_dump())

    def admission(self) -> Refusal | None:
        """``None`` when a new export request may be accepted."""
        retry = self.config.receiver.retry_after_seconds
        if self._stopping:
            return Refusal("shutting_down", retry, "the processor is shutting down; retry")
        if self._assembler.over_budget():
            return Refusal("over_budget", retry, "the processor is over its memory budget; retry later")
        return None

    def ingest(self, result: Any, protocol: str) -> dict[str, int]:
        """Buffer a ``DecodeResult``'s spans and count what happened to them; returns the spans
        dropped here (per-trace caps, late spans past retention) by reason."""
        m = self.metrics
        with self._lock:
            report = self._assembler.add(result.spans, self._clock(), result.wire)
            if report.opened and self._ledger is not None:
                self._ledger.track_in_flight(report.opened)
            in_flight = len(self._assembler.in_flight)
            buffered = self._assembler.buffered_bytes
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
            labels = m.run_labels(hit.service_name, hit.agent, hit.model)
            m.live_detections_total.labels(*labels, hit.finding.mode).inc()
        m.traces_in_flight.set(in_flight)
        m.buffered_bytes.set(buffered)
        if report.evicted:
            self._wake.set()
        if report.passthrough:
            for forwarder in self._forwarders:
                forwarder.forward(report.passthrough)
        dropped = dict(report.dropped)
        if report.late_dropped:
            dropped[LATE_DROPPED] = report.late_dropped
        return dropped

    def answer(self, result: Any, dropped: dict[str, int]):
        """The OTLP partial-success answer for a request (``None``: every span kept)."""
        return export_response(result.rejected, result.messages, dropped, self._drop_details)

    def bytes_refusal(self) -> Refusal:
        return Refusal("bytes_in_flight", self.config.receiver.retry_after_seconds,
                       "too many request bytes are being received at once (receiver.max_bytes_in_flight); retry later")

    def refused(self, refusal: Refusal, protocol: str) -> None:
        self.metrics.ingest_refused_requests_total.labels(protocol, refusal.reason).inc()

    # --- lifecycle -----------------------------------------------------------------------------
    def _start(self) -> None:
        self._stopping = False
        lost = self._ledger.take_in_flight() if self._ledger is not None else []
        if lost:
            self.metrics.traces_lost_total.labels("restart").inc(len(lost))
            log.warning("%d run(s) were acknowledged but not diagnosed when the processor last stopped without flushing; "
                        "counted in mast_traces_lost_total", len(lost))
        self._sweeper = threading.Thread(target=self._sweep_loop, name="mast-otel-sweeper", daemon=True)
        self._sweeper.start()

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
        """Diagnose every run complete now; returns how many."""
        with self._lock:
            done = self._assembler.due(self._clock())
            self.metrics.traces_in_flight.set(len(self._assembler.in_flight))
            self.metrics.buffered_bytes.set(self._assembler.buffered_bytes)
        self._finish(done)
        return len(done)

    def _finish(self, done: list[Completed]) -> None:
        if not done:
            return
        for completed in done:
            self.metrics.traces_completed_total.labels(completed.completion).inc()
            if completed.evicted_reason:
                self.metrics.traces_evicted_total.labels(completed.evicted_reason).inc()
        self.merge.finish(done)

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

    def _rules(self, run: Run) -> list[Finding]:
        try:
            derive_hints(run, self.config.hints)
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
        return Run.from_spans(trace_id, spans, completion=kept.completion) if spans is not None else None

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
