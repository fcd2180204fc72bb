"""The merge stage: rule findings, live findings, judge findings and outcomes become one
diagnosis per run, and the stage decides once what the metrics count for it.

It keeps the counting state (:class:`Accounting`) and the latest diagnosis of recent runs in
memory, so ``/metrics`` is right with the store switched off; with the store on, the store
persists both and is read back for runs this process no longer remembers (after a restart).
Its outputs are a list of :class:`DiagnosisExporter`; a failure finishing one run, or in one
exporter, affects that run only and is counted (``mast_finish_errors_total{stage}``).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections import OrderedDict
from typing import Callable, Mapping, Protocol, Sequence, TypeVar

from mast_otel.wire.attributes import OUTCOMES
from mast_otel.processors import taxonomy
from mast_otel.processors.attribution import attribute, with_agents
from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.ingest.decode import WireSpan
from mast_otel.processors.model import ArrivedState, Diagnosis, Finding, Run, Span, arrived_states
from mast_otel.processors.attribution import build_diagnosis
from mast_otel.processors.service.pipeline.assembler import Completed, LiveObserver, Retained, TraceBuffer
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.store.accounting import Accounting
from mast_otel.processors.service.memory.account import held_bytes
from mast_otel.processors.service.outputs.base import Batch, Counts, DiagnosedRun, DiagnosisExporter
from mast_otel.processors.service.store.span_codec import parse_run
from mast_otel.processors.service.store.diagnoses import DiagnosisStore

log = logging.getLogger(__name__)
# remembered runs may hold at most this fraction of assembly.max_buffered_bytes
REMEMBERED_SHARE = 8
# an entry's slots in the ordered dict and the size dict, its key and tuple (besides what held_bytes counts)
_REMEMBERED_ENTRY_BYTES = 200

T = TypeVar("T")
# How long a replica's claim on a new run stands before another may take it over: long enough to
# diagnose and store a run, short enough that a replica that died meanwhile holds nothing for long.
CLAIM_SECONDS = 60.0
RulesFn = Callable[[Run, "LiveObserver | None"], "list[Finding]"]  # a run and its live detection


class RunSource(Protocol):
    """Where a run's spans are found while the processor still holds them."""

    def get_run(self, trace_id: str) -> Run | None: ...

    def get_wire(self, trace_id: str) -> Mapping[str, WireSpan]: ...


class FindingsInput(Protocol):
    """The merge stage's typed input for findings from outside the rules (the judge)."""

    def apply_findings(self, trace_id: str, findings: list[Finding]) -> Diagnosis | None: ...


def reconcile(final: list[Finding], live: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """Final findings (marked ``live`` where a live finding confirmed them) and withdrawn live findings."""
    if not live:  # most runs raise nothing live: nothing to confirm or withdraw
        return list(final), []
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


def count(d: Diagnosis, accounting: Accounting, *, new_run: bool, root_end_ns: int | None = None) -> Counts:
    """What is newly countable for ``d`` given what ``accounting`` already counted; updates it."""
    modes = []
    for mode, verdict in d.verdicts.items():
        if mode not in accounting.modes:
            source = verdict.findings[0].source
            accounting.modes[mode] = source
            modes.append((mode, source))
    outcome, outcome_modes = None, []
    if d.outcome is not None:
        if accounting.outcome is None:
            accounting.outcome = outcome = d.outcome
        for mode in d.modes:
            if mode not in accounting.outcome_modes:
                accounting.outcome_modes.append(mode)
                outcome_modes.append(mode)
    return Counts(new_run, tuple(modes), outcome, tuple(outcome_modes), accounting.outcome, root_end_ns,
                  _new_interventions(d, accounting))


def _new_interventions(d: Diagnosis, accounting: Accounting) -> tuple[tuple[str, str, str], ...]:
    """Guard events not counted yet: each is the n-th event on its span, so a re-diagnosis (late
    spans) never counts one twice."""
    if not d.interventions:
        return ()
    seen: dict[str, int] = {}
    counted = set(accounting.interventions)
    new = []
    for g in d.interventions:
        n = seen[g.span_id] = seen.get(g.span_id, -1) + 1
        key = f"{g.span_id}:{n}"
        if key not in counted:
            counted.add(key)
            accounting.interventions.append(key)
            new.append((g.mode, g.guard, g.action))
    return tuple(new)


def _arrived(spans: list[Span], buf: TraceBuffer, kept: Retained | None) -> list[ArrivedState]:
    """The states ``spans`` arrived in (``arrived_states``): those the assembler took when the run
    completed, before anything changed its spans, when ``spans`` are the very spans it retained
    (the usual case); else taken now."""
    if kept is not None and kept.arrived is not None and spans is buf.spans and kept.spans is spans \
            and len(kept.arrived) == len(spans):
        return kept.arrived
    return arrived_states(spans)[0]


class MergeStage:
    """Merges findings into diagnoses and hands them to the exporters."""

    def __init__(self, config: ProcessorConfig, metrics: Metrics, exporters: Sequence[DiagnosisExporter],
                 runs: RunSource, rules: RulesFn, *, durable: DiagnosisStore | None = None,
                 wall_clock: Callable[[], float] = time.time, logged: bool = False) -> None:
        self.config = config
        self._logged = logged  # the log keeps every run until it is settled: deferred ones may be let go of
        self.metrics = metrics
        self.exporters = list(exporters)
        self.runs = runs
        self.durable = durable
        self._rules = rules
        self._wall = wall_clock
        self._lock = threading.RLock()  # serializes diagnosis, accounting and outcome updates
        self._remembered = config.merge.remembered_runs
        self._recent: OrderedDict[str, tuple[Diagnosis, Accounting]] = OrderedDict()
        # what each remembered run holds (its diagnosis and accounting), charged to the memory account
        # and bounded to a share of its budget as well as to merge.remembered_runs
        self._recent_sizes: dict[str, int] = {}
        self.remembered_bytes = 0
        self._remembered_bytes_cap = max(1, config.assembly.max_buffered_bytes // REMEMBERED_SHARE)
        self._pending: OrderedDict[str, tuple[str, float | None, float]] = OrderedDict()  # + when it was posted
        # Runs whose store look-up failed: neither diagnosed on a guess nor settled, tried again
        # with the next batch (or a quiet tick), with the pending outcome already taken for them.
        self._deferred: list[Completed] = []
        self._deferred_outcomes: dict[str, tuple[str, float | None]] = {}
        self._retry_at = 0.0
        self._retry_pause = config.store.retry_interval_seconds
        self._owner = uuid.uuid4().hex  # this process, in the store's claims on new runs
        self._releasing = False  # deferred runs past merge.max_deferred_runs were let go of (logged once)

    # --- memory --------------------------------------------------------------------------------
    def _remember(self, d: Diagnosis, accounting: Accounting) -> None:
        """Keep the run's latest diagnosis and accounting; the least recent go beyond
        ``merge.remembered_runs`` or beyond their share of the memory budget (a session flood's
        runs, or runs named with ids of hundreds of kilobytes, held about 2 KB to 1 MB each, uncharged)."""
        recent, sizes = self._recent, self._recent_sizes
        nbytes = held_bytes(d) + held_bytes(accounting) + _REMEMBERED_ENTRY_BYTES
        self.remembered_bytes += nbytes - sizes.get(d.trace_id, 0)
        sizes[d.trace_id] = nbytes
        recent[d.trace_id] = (d, accounting)
        recent.move_to_end(d.trace_id)
        while recent and (len(recent) > self._remembered or self.remembered_bytes > self._remembered_bytes_cap):
            trace_id, _ = recent.popitem(last=False)
            self.remembered_bytes -= sizes.pop(trace_id)

    def _last(self, trace_id: str) -> tuple[Diagnosis, Accounting] | None:
        """The run's latest diagnosis and accounting: a shared store's first (another replica may
        have changed the run since: an outcome, the other half of its spans), else this process's."""
        shared = self.durable is not None and self.durable.shared
        kept = None if shared else self._recent.get(trace_id)
        if kept is not None:
            return kept
        if self.durable is None:
            return None
        return self.durable.latest(trace_id) or self._recent.get(trace_id)

    def _stored_before(self, done: list[Completed]) -> set[str]:
        """New runs of ``done`` this process forgot but the store holds (one query for the batch)."""
        if self.durable is None:
            return set()
        fresh = [c.buffer.trace_id for c in done if c.buffer.previous is None and c.buffer.trace_id not in self._recent]
        return self.durable.existing(fresh) if fresh else set()

    def _claimed_elsewhere(self, runs: list[Completed], stored: set[str]) -> set[str]:
        """New runs of ``runs`` another replica is diagnosing as new right now (a shared store):
        this part waits for that diagnosis, then merges into it, so the run is counted once."""
        if self.durable is None or not self.durable.shared:
            return set()
        fresh = [c.buffer.trace_id for c in runs
                 if c.buffer.previous is None and c.buffer.trace_id not in self._recent and c.buffer.trace_id not in stored]
        if not fresh:
            return set()
        return set(fresh) - self.durable.claim_runs(fresh, self._owner, CLAIM_SECONDS)

    def _take_pending(self, trace_ids: list[str]) -> dict[str, tuple[str, float | None]]:
        """Outcomes posted before these runs were diagnosed (taken: each applies once)."""
        if self.durable is not None:
            return self.durable.take_pending_outcomes(trace_ids)
        taken = {}
        fresh_after = self._wall() - self.config.merge.pending_outcome_ttl_seconds
        for trace_id in trace_ids:
            kept = self._pending.pop(trace_id, None)
            if kept is not None and kept[2] >= fresh_after:
                taken[trace_id] = kept[0], kept[1]
        return taken

    def _stored_spans(self, buf: TraceBuffer, held: bool) -> list[Span] | None:
        """The run's spans with those another replica stored (a run the gateway re-routed), or
        ``None`` when the store keeps no spans for it. ``held``: the run was diagnosed before."""
        if not held or self.durable is None or not self.durable.keeps_spans:
            return None
        text = self.durable.spans(buf.trace_id)
        if text is None:
            return None
        mine = buf.span_ids
        stored, links = parse_run(text)
        for span_id, parent in links.items():
            buf.links.setdefault(span_id, parent)
        return [s for s in stored if s.span_id not in mine] + buf.spans

    def _put_pending(self, trace_id: str, outcome: str, score: float | None) -> None:
        if self.durable is not None:
            self.durable.put_pending_outcome(trace_id, outcome, score)
            return
        now = self._wall()
        self._pending.pop(trace_id, None)
        self._pending[trace_id] = (outcome, score, now)
        expired = now - self.config.merge.pending_outcome_ttl_seconds
        while self._pending and (len(self._pending) > self.config.merge.pending_outcomes
                                 or next(iter(self._pending.values()))[2] < expired):
            self._pending.popitem(last=False)

    @property
    def _store_errors(self) -> tuple[type[BaseException], ...]:
        return tuple(self.durable.errors) if self.durable is not None else ()

    def _store_failed(self, operation: str, exc: BaseException) -> None:
        self.metrics.store_errors_total.labels(operation).inc()
        log.warning("the diagnosis store could not answer (%s: %s); the runs that need it wait in the log "
                    "and are diagnosed once it answers", type(exc).__name__, exc)

    @property
    def deferred_bytes(self) -> int:
        """Memory the deferred runs hold: charged until they are diagnosed and settled."""
        return sum(c.buffer.nbytes for c in self._deferred)

    def retry_due(self) -> bool:
        """Deferred runs wait and their retry pause has passed (a quiet replica's tick)."""
        return bool(self._deferred) and self._wall() >= self._retry_at

    def _defer(self, runs: list[Completed]) -> None:
        self._deferred.extend(runs)
        cap = self.config.merge.max_deferred_runs
        if self._logged and len(self._deferred) > cap:  # without the log, letting go would lose them
            self._release_deferred(len(self._deferred) - cap)
        self._retry_at = self._wall() + self._retry_pause
        self._retry_pause = min(self._retry_pause * 2, 30.0)

    def _release_deferred(self, excess: int) -> None:
        """Let go of ``excess`` deferred runs, newest first: neither finished nor settled, so the log
        keeps their spans and a restart diagnoses them. A run holding an outcome taken from the
        pending ones stays (letting it go would forget the outcome)."""
        released: set[int] = set()
        for index in range(len(self._deferred) - 1, -1, -1):
            if len(released) == excess:
                break
            if self._deferred[index].buffer.trace_id not in self._deferred_outcomes:
                released.add(index)
        if not released:
            return
        self._deferred = [c for i, c in enumerate(self._deferred) if i not in released]
        self.metrics.deferred_runs_released_total.inc(len(released))
        if not self._releasing:  # once per spell of the store failing
            self._releasing = True
            log.error("more than %d runs wait for the store (merge.max_deferred_runs): the newest are kept in the "
                      "log only and diagnosed when the processor next starts (mast_deferred_runs_released_total)",
                      self.config.merge.max_deferred_runs)

    # --- completed runs ------------------------------------------------------------------------
    def finish(self, done: list[Completed]) -> list[Completed]:
        """Diagnose completed runs (and those deferred before) and export them as one batch.

        Returns the runs finished, which may be settled; a run whose store look-up failed is not
        among them: it is kept (charged to memory) and tried again, so it is neither dropped nor
        diagnosed on a guess (a fragment saved over the whole run, a run counted twice)."""
        with self._lock:
            runs, self._deferred = self._deferred + done, []
            if not runs:
                return []
            operation = "existing"
            try:
                stored = self._stored_before(runs)
                operation = "claim"
                elsewhere = self._claimed_elsewhere(runs, stored)
                if elsewhere:
                    log.debug("%d runs are being diagnosed on another replica: their parts here wait to merge", len(elsewhere))
                    self._defer([c for c in runs if c.buffer.trace_id in elsewhere])
                    runs = [c for c in runs if c.buffer.trace_id not in elsewhere]
                    if not runs:
                        return []
                operation = "pending"
                waiting = [c.buffer.trace_id for c in runs if c.buffer.trace_id not in self._deferred_outcomes]
                taken = self._take_pending(waiting) if waiting else {}
            except self._store_errors as exc:
                self._store_failed(operation, exc)
                self._defer(runs)
                return []
            self._deferred_outcomes.update(taken)
            items, finished = [], []
            for completed in runs:
                trace_id = completed.buffer.trace_id
                try:
                    item = self._diagnose(completed, stored, self._deferred_outcomes.get(trace_id))
                except self._store_errors as exc:
                    self._store_failed("spans", exc)
                    self._defer([completed])
                    continue
                except Exception:
                    self.metrics.finish_errors_total.labels("diagnose").inc()
                    log.exception("finishing trace %s failed; the other runs carry on", trace_id)
                    item = None
                self._deferred_outcomes.pop(trace_id, None)
                finished.append(completed)
                if item is not None:
                    items.append(item)
            if not self._deferred:
                self._retry_pause = self.config.store.retry_interval_seconds
                self._releasing = False
            self._export(Batch(items, [c.buffer.trace_id for c in finished]))
            return finished

    def _diagnose(self, completed: Completed, stored: set[str],
                  pending: tuple[str, float | None] | None) -> DiagnosedRun | None:
        buf = completed.buffer
        diagnosed_before = buf.trace_id in self._recent or buf.trace_id in stored
        spans = self._stored_spans(buf, buf.previous is not None or diagnosed_before)
        if buf.previous is None and diagnosed_before and spans is None:
            # Diagnosed before (a restart, or past retention): a fragment must not replace it.
            self.metrics.late_spans_total.labels("dropped").inc(len(buf.spans))
            return None
        last = self._last(buf.trace_id) if buf.previous is not None or spans is not None else None
        previous, accounting = (last[0], last[1].copy()) if last is not None else (None, Accounting())
        if spans is None:
            spans = buf.spans
        # a shared store keeps the spans as they arrived, for the replica the rest of the run may go to
        arrived = _arrived(spans, buf, completed.retained) if self.durable is not None and self.durable.keeps_spans else None
        if spans is buf.spans:
            run = buf.run(completed.completion)
        else:
            run = Run.from_spans(buf.trace_id, spans, completion=completed.completion, links=buf.links)
        findings, withdrawn = reconcile(self._rules(run, buf.live), buf.live_findings)
        if previous is not None:
            findings += [f for f in previous.findings if f.source != "rules"]
            withdrawn = previous.withdrawn + [w for w in withdrawn if w.mode not in {p.mode for p in previous.withdrawn}]
        d = build_diagnosis(run, findings, severity_overrides=self.config.detection.severity_overrides, diagnosed_at=self._wall())
        d.withdrawn = withdrawn
        if pending is not None:
            d.outcome, d.score = pending[0], pending[1] if pending[1] is not None else d.score
        elif previous is not None and d.outcome is None:
            d.outcome, d.score = previous.outcome, previous.score
        d.outcome = normalize_outcome(d.outcome)
        if d.outcome != normalize_outcome(run.hints.outcome):  # a posted outcome decides whether it failed
            d.attribution = attribute(run, findings, self.config.detection.severity_overrides, outcome=d.outcome)
        if previous is not None:
            d.revision = previous.revision + 1
        counts = count(d, accounting, new_run=previous is None, root_end_ns=buf.root_end_ns)
        self._remember(d, accounting)
        if buf.unlabelled_live:  # raised live before any span named the agent: under the diagnosis's labels
            labels = self.metrics.run_labels(d.service_name, d.agent, d.model)
            for finding in buf.unlabelled_live:
                self.metrics.live_detections_total.labels(*labels, finding.mode).inc()
            buf.unlabelled_live.clear()
        kept = completed.retained
        return DiagnosedRun("diagnosis", d, previous, counts, accounting, run=run, spans=spans, wire=buf.wire,
                            exported=kept.exported if kept is not None else set(),
                            arrived=arrived,
                            links=buf.links)

    # --- typed inputs: judge findings, outcomes --------------------------------------------------
    def apply_findings(self, trace_id: str, findings: list[Finding]) -> Diagnosis | None:
        """Merge extra (judge) findings into a diagnosed run; exported like rule findings."""
        with self._lock:
            last = self._last(trace_id)
            if last is None:
                return None
            previous, accounting = last
            known = {(f.mode, f.source, f.detector) for f in previous.findings}
            new = [f for f in findings if (f.mode, f.source, f.detector) not in known]
            if not new:
                return previous
            run = self.runs.get_run(trace_id)
            if run is not None and len(run.agent_spans) > 1:  # a team: judge findings name their agent too
                new = with_agents(run, new)
            merged = previous.findings + new
            overrides = self.config.detection.severity_overrides
            d = dataclasses.replace(
                previous, findings=merged, revision=previous.revision + 1, diagnosed_at=self._wall(),
                fatal=taxonomy.is_fatal({f.mode for f in merged}, overrides),
                attribution=attribute(run, merged, overrides, outcome=previous.outcome) if run is not None
                else previous.attribution,
            )
            accounting = accounting.copy()
            counts = count(d, accounting, new_run=False)
            self._remember(d, accounting)
            spans = run.spans if run is not None else ()
            wire = self.runs.get_wire(trace_id) if run is not None else {}
            self._export(Batch([DiagnosedRun("findings", d, previous, counts, accounting, run=run, spans=spans, wire=wire)]))
        return d

    def record_outcome(self, trace_id: str, outcome: str, score: float | None = None) -> Diagnosis | None:
        """Ground truth for a run; kept pending (applied at diagnosis) when the run is not diagnosed yet.

        A change of a diagnosed run's outcome reaches the judge trigger while the run is still
        held (its "judge failed runs" policy for an outcome posted after the diagnosis)."""
        outcome = normalize_outcome(outcome) or "unknown"
        with self._lock:
            last = self._last(trace_id)
            if last is None:
                self._put_pending(trace_id, outcome, score)
                return None
            before, accounting = last
            d = dataclasses.replace(before, outcome=outcome, score=score if score is not None else before.score)
            changed = (before.outcome, before.score) != (d.outcome, d.score)
            run = self.runs.get_run(trace_id) if changed else None
            if run is not None and before.outcome != d.outcome:  # failed or not decides whether it is attributed
                d = dataclasses.replace(d, attribution=attribute(run, d.findings, self.config.detection.severity_overrides,
                                                                 outcome=d.outcome))
            accounting = accounting.copy()
            counts = count(d, accounting, new_run=False)
            self._remember(d, accounting)
            self._export(Batch([DiagnosedRun("outcome", d, before, counts, accounting, run=run)]))
        return d

    # --- fan-out -------------------------------------------------------------------------------
    def _export(self, batch: Batch) -> None:
        for exporter in self.exporters:
            try:
                exporter.export(batch)
            except Exception:
                if len(batch.runs) <= 1:
                    self._failed(exporter, batch.runs)
                    continue
                for item in batch.runs:  # one bad run must not cost the others
                    try:
                        exporter.export(Batch([item]))
                    except Exception:
                        self._failed(exporter, [item])
                if batch.settled:
                    try:
                        exporter.export(Batch([], batch.settled))
                    except Exception:
                        log.exception("exporter %s failed to settle %d runs", exporter.name, len(batch.settled))

    def _failed(self, exporter: DiagnosisExporter, items: list[DiagnosedRun]) -> None:
        self.metrics.finish_errors_total.labels(exporter.name).inc(max(1, len(items)))
        log.exception("exporter %s failed for trace(s) %s; the other runs and exporters carry on",
                      exporter.name, ", ".join(i.trace_id for i in items))
