"""The pipeline: decoded spans in; diagnoses, metrics, stored records and enriched spans out.

Receivers call :meth:`Pipeline.admission` (backpressure) and :meth:`Pipeline.ingest`. A
sweeper thread completes runs (see ``assembler``), diagnoses them with the rule detectors,
reconciles live findings, counts metrics by DESIGN.md's rules (the per-run accounting is kept
in the store so neither re-diagnosis nor a restart counts twice), saves, re-exports and
notifies listeners such as the judge. Detectors are constructor arguments (defaulting to
``mast_otel.processors.detectors``), so tests and benchmarks can plug in their own.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from mast_otel.instrumentation.attributes import OUTCOMES
from mast_otel.processors import registry
from mast_otel.processors.config import DetectionConfig, ProcessorConfig
from mast_otel.processors.hints import derive_hints, qualify
from mast_otel.processors.model import Diagnosis, Finding, Run, build_diagnosis
from mast_otel.processors.service.assembler import Assembler, Completed
from mast_otel.processors.service.exporter import OTLPReexporter, changed_span_ids, enrich_spans
from mast_otel.processors.service.metrics import Metrics
from mast_otel.processors.service.steps import run_steps
from mast_otel.processors.service.store import Accounting, DiagnosisStore

log = logging.getLogger(__name__)

Listener = Callable[[Run, Diagnosis], None]
DiagnoseFn = Callable[[Run, DetectionConfig], "list[Finding]"]


@dataclass(frozen=True)
class Refusal:
    """Why ingest is refused right now; receivers map it to 429/503 or RESOURCE_EXHAUSTED/UNAVAILABLE."""

    reason: str  # "over_budget" | "shutting_down"
    retry_after_seconds: int
    message: str


def reconcile(final: list[Finding], live: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """Final findings (marked ``live`` where a live finding confirmed them) and withdrawn live findings."""
    final_modes = {f.mode for f in final}
    live_modes = {f.mode for f in live}
    confirmed = [dataclasses.replace(f, live=True) if f.mode in live_modes and not f.live else f for f in final]
    withdrawn: dict[str, Finding] = {}
    for f in live:
        if f.mode not in final_modes:
            withdrawn.setdefault(f.mode, f)
    return confirmed, list(withdrawn.values())


def normalize_outcome(value: str | None) -> str | None:
    if value is None:
        return None
    return value if value in OUTCOMES else "unknown"


class Pipeline:
    def __init__(
        self,
        config: ProcessorConfig,
        metrics: Metrics,
        store: DiagnosisStore,
        exporter: OTLPReexporter | None = None,
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
        self.exporter = exporter
        self._diagnose = diagnose
        self._clock = clock
        self._wall = wall_clock
        detection = config.detection
        live_factory = (lambda: live_detection(detection)) if detection.live else None
        self._assembler = Assembler(config.assembly, live_factory, on_live_error=self._live_error)
        self._lock = threading.Lock()  # guards the assembler
        self._finish_lock = threading.RLock()  # serializes diagnosis, accounting and outcome updates
        self._listeners: list[Listener] = []
        self._stopping = False
        self._store_failed = False
        self._sweeper: threading.Thread | None = None
        self._wake = threading.Event()

    # --- ingest (called by receivers) --------------------------------------------------------
    @property
    def decode_options(self):
        from mast_otel.processors.ingest.decode import DecodeOptions

        return DecodeOptions(keep_raw=self.exporter is not None)

    def admission(self) -> Refusal | None:
        """``None`` when a new export request may be accepted."""
        retry = self.config.receiver.retry_after_seconds
        if self._stopping:
            return Refusal("shutting_down", retry, "the processor is shutting down; retry")
        if self._assembler.over_budget():
            return Refusal("over_budget", retry, "the processor is over its memory budget; retry later")
        return None

    def ingest(self, result: Any, protocol: str) -> None:
        """Buffer a ``DecodeResult``'s spans and count what happened to them."""
        m = self.metrics
        with self._lock:
            report = self._assembler.add(result.spans, self._clock())
            if report.opened:
                self._store_write("track_in_flight", self.store.track_in_flight, report.opened)
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
        if self.exporter is not None and report.passthrough:
            self.exporter.forward(report.passthrough)

    def refused(self, refusal: Refusal, protocol: str) -> None:
        self.metrics.ingest_refused_requests_total.labels(protocol, refusal.reason).inc()

    # --- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self._stopping = False
        lost = self._store_write("take_in_flight", self.store.take_in_flight)
        if lost:
            self.metrics.traces_lost_total.labels("restart").inc(len(lost))
            log.warning("%d run(s) were acknowledged but not diagnosed when the processor last stopped without flushing; "
                        "counted in mast_traces_lost_total", len(lost))
        if self.exporter is not None:
            self.exporter.start()
        self._sweeper = threading.Thread(target=self._sweep_loop, name="mast-otel-sweeper", daemon=True)
        self._sweeper.start()

    def stop(self, flush: bool = True) -> None:
        """Refuse new spans, diagnose every buffered run (``flush``), drain the exporter."""
        self._stopping = True
        if self._sweeper is not None:
            self._wake.set()
            self._sweeper.join()
            self._sweeper = None
        if flush:
            with self._lock:
                done = self._assembler.drain(self._clock())
            self._finish(done)
        if self.exporter is not None:
            self.exporter.stop()

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

    def _store_write(self, operation: str, write: Callable[..., Any], *args: Any) -> Any:
        """``write(*args)``; a store that refuses writes (disk full, read-only) is counted and
        logged once, and diagnosis, metrics and re-export carry on without it."""
        try:
            return write(*args)
        except sqlite3.Error as exc:
            self.metrics.store_errors_total.labels(operation).inc()
            if not self._store_failed:
                self._store_failed = True
                log.error("the diagnosis store %s refused a write (%s: %s); ingest, metrics and re-export continue, "
                          "diagnoses are not stored while this lasts (see mast_store_errors_total)", self.store.path, type(exc).__name__, exc)
            return None

    # --- diagnosis -----------------------------------------------------------------------------
    def add_listener(self, fn: Listener) -> None:
        """Call ``fn(run, diagnosis)`` after each (re)diagnosis, on the sweeper thread, and after an
        outcome change of a run still held, on the caller's thread: keep it quick."""
        self._listeners.append(fn)

    def _notify(self, run: Run, d: Diagnosis) -> None:
        for listener in self._listeners:
            try:
                listener(run, d)
            except Exception:
                log.exception("diagnosis listener %r failed", listener)

    def _live_error(self, exc: BaseException) -> None:
        log.error("live detection failed (%s); live detection is off for that trace", exc)

    def _rules(self, run: Run) -> list[Finding]:
        try:
            derive_hints(run, self.config.hints)
            return qualify(self._diagnose(run, self.config.detection), run)
        except Exception:
            log.exception("rule detection failed for trace %s", run.trace_id)
            return []

    def _finish(self, done: list[Completed]) -> None:
        if not done:
            return
        results: list[tuple[Completed, Run, Diagnosis, Diagnosis | None]] = []
        with self._finish_lock:
            saves, steps = [], {}
            for completed in done:
                self.metrics.traces_completed_total.labels(completed.completion).inc()
                if completed.evicted_reason:
                    self.metrics.traces_evicted_total.labels(completed.evicted_reason).inc()
                item = self._diagnose_completed(completed)
                if item is not None:
                    results.append((completed, *item[:3]))
                    saves.append((item[1], item[3]))
                    steps[item[0].trace_id] = run_steps(item[0])
            self._store_write("save", self.store.save_many, saves, [c.buffer.trace_id for c in done], steps)
        for completed, run, diagnosis, previous in results:
            self._export(completed, diagnosis, previous)
            self._notify(run, diagnosis)

    def _diagnose_completed(self, completed: Completed) -> tuple[Run, Diagnosis, Diagnosis | None, Accounting] | None:
        buf = completed.buffer
        previous = self.store.get(buf.trace_id) if buf.previous is not None else None
        if previous is None and buf.previous is None and self.store.exists(buf.trace_id):
            # Diagnosed before a restart and past retention: a fragment must not replace it.
            self.metrics.late_spans_total.labels("dropped").inc(len(buf.spans))
            return None
        run = buf.run(completed.completion)
        findings, withdrawn = reconcile(self._rules(run), buf.live_findings)
        if previous is not None:
            findings += [f for f in previous.findings if f.source != "rules"]
            withdrawn = previous.withdrawn + [w for w in withdrawn if w.mode not in {p.mode for p in previous.withdrawn}]
        d = build_diagnosis(run, findings, severity_overrides=self.config.detection.severity_overrides, diagnosed_at=self._wall())
        d.withdrawn = withdrawn
        pending = self.store.take_pending_outcome(buf.trace_id)
        if pending is not None:
            d.outcome, d.score = pending[0], pending[1] if pending[1] is not None else d.score
        elif previous is not None and d.outcome is None:
            d.outcome, d.score = previous.outcome, previous.score
        d.outcome = normalize_outcome(d.outcome)
        accounting = Accounting()
        if previous is not None:
            d.revision = previous.revision + 1
            accounting = self.store.accounting(buf.trace_id)
        else:
            self._count_run(d, buf.root_end_ns)
        self._count_modes(d, accounting)
        self._count_outcome(d, accounting)
        self._count_interventions(d, accounting)
        return run, d, previous, accounting

    # --- counting (DESIGN.md's rules) ----------------------------------------------------------
    def _labels(self, d: Diagnosis) -> tuple[str, str, str]:
        return self.metrics.run_labels(d.service_name, d.agent, d.model)

    def _count_run(self, d: Diagnosis, root_end_ns: int | None) -> None:
        """Once per run, at its first diagnosis."""
        labels = self._labels(d)
        self.metrics.traces_total.labels(*labels).inc()
        self.metrics.failure_modes_per_trace.labels(*labels).observe(len(d.modes))
        end_ns = root_end_ns or d.ended_ns
        if end_ns:
            self.metrics.diagnosis_latency_seconds.observe(max(0.0, d.diagnosed_at - end_ns / 1e9))

    def _count_modes(self, d: Diagnosis, accounting: Accounting) -> None:
        """Once per (run, mode), under the source that found it first."""
        labels = self._labels(d)
        overrides = self.config.detection.severity_overrides
        for mode, verdict in d.verdicts.items():
            if mode in accounting.modes:
                continue
            source = verdict.findings[0].source
            accounting.modes[mode] = source
            info = registry.get(mode)
            self.metrics.failure_mode_traces_total.labels(
                *labels, mode, info.name, info.category, registry.severity(mode, overrides), source
            ).inc()

    def _count_interventions(self, d: Diagnosis, accounting: Accounting) -> None:
        """Once per guard intervention event; a re-diagnosis (late spans) never counts one twice."""
        if not d.interventions:
            return
        labels = self._labels(d)
        seen: dict[str, int] = {}
        counted = set(accounting.interventions)
        for g in d.interventions:
            n = seen[g.span_id] = seen.get(g.span_id, -1) + 1
            key = f"{g.span_id}:{n}"  # the n-th event on that span
            if key in counted:
                continue
            counted.add(key)
            accounting.interventions.append(key)
            self.metrics.guard_interventions_total.labels(*labels, g.mode, g.guard, g.action).inc()

    def _count_outcome(self, d: Diagnosis, accounting: Accounting) -> bool:
        """Once per run when its outcome is known; once per (run, mode) once both are. True if counted."""
        if d.outcome is None:
            return False
        labels = self._labels(d)
        changed = False
        if accounting.outcome is None:
            accounting.outcome = d.outcome
            self.metrics.outcomes_total.labels(*labels, d.outcome).inc()
            changed = True
        overrides = self.config.detection.severity_overrides
        for mode in d.modes:
            if mode in accounting.outcome_modes:
                continue
            accounting.outcome_modes.append(mode)
            info = registry.get(mode)
            self.metrics.failure_mode_outcomes_total.labels(
                *labels, mode, info.category, registry.severity(mode, overrides), accounting.outcome
            ).inc()
            changed = True
        return changed

    # --- re-export -----------------------------------------------------------------------------
    def _export(self, completed: Completed, d: Diagnosis, previous: Diagnosis | None) -> None:
        if self.exporter is None:
            return
        kept = completed.retained
        exported = kept.exported if kept is not None else set()
        only = None
        if previous is not None:
            only = {s.span_id for s in completed.buffer.spans if s.span_id not in exported}
            if (previous.modes, previous.sources, previous.fatal) != (d.modes, d.sources, d.fatal):
                only |= changed_span_ids(d)
        pairs = enrich_spans(completed.buffer.spans, d, only)
        exported.update(s.span_id for s, _ in pairs)
        self.exporter.submit(pairs)

    # --- API used by the judge, the outcome route and the web view -----------------------------
    def get_run(self, trace_id: str) -> Run | None:
        """A diagnosed run still in the retention window."""
        with self._lock:
            kept = self._assembler.retained.get(trace_id)
            spans = list(kept.spans) if kept is not None else None
        return Run.from_spans(trace_id, spans, completion=kept.completion) if spans is not None else None

    def apply_findings(self, trace_id: str, findings: list[Finding]) -> Diagnosis | None:
        """Merge extra (judge) findings into a stored diagnosis: store, metrics, re-export."""
        with self._finish_lock:
            previous = self.store.get(trace_id)
            if previous is None:
                return None
            known = {(f.mode, f.source, f.detector) for f in previous.findings}
            new = [f for f in findings if (f.mode, f.source, f.detector) not in known]
            if not new:
                return previous
            merged = previous.findings + new
            d = dataclasses.replace(
                previous, findings=merged, revision=previous.revision + 1, diagnosed_at=self._wall(),
                fatal=registry.is_fatal({f.mode for f in merged}, self.config.detection.severity_overrides),
            )
            accounting = self.store.accounting(trace_id)
            self._count_modes(d, accounting)
            self._count_outcome(d, accounting)
            self.store.save(d, accounting)
        if self.exporter is not None:
            with self._lock:
                kept = self._assembler.retained.get(trace_id)
            if kept is not None:
                self.exporter.submit(enrich_spans(kept.spans, d, changed_span_ids(d)))
        return d

    def record_outcome(self, trace_id: str, outcome: str, score: float | None = None) -> Diagnosis | None:
        """Ground truth for a run; kept pending (applied at diagnosis) when the run is not diagnosed yet.

        A change of a diagnosed run's outcome reaches the listeners while the run is still held
        (e.g. the judge's "judge failed runs" policy for an outcome posted after the diagnosis)."""
        outcome = normalize_outcome(outcome) or "unknown"
        with self._finish_lock:
            before = self.store.get(trace_id)
            d = self.store.set_outcome(trace_id, outcome, score) if before is not None else None
            if d is None:
                self.store.put_pending_outcome(trace_id, outcome, score)
                return None
            accounting = self.store.accounting(trace_id)
            if self._count_outcome(d, accounting):
                self.store.set_accounting(trace_id, accounting)
        if (before.outcome, before.score) != (d.outcome, d.score):
            run = self.get_run(trace_id)
            if run is not None:
                self._notify(run, d)
        return d

    @property
    def in_flight(self) -> int:
        return len(self._assembler.in_flight)
