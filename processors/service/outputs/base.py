"""The one small interface every output of a diagnosis implements (like the OTel SDK's
``SpanExporter``): ``export(batch)`` plus the component lifecycle.

The merge stage hands each exporter the same :class:`Batch`: the runs it just (re)diagnosed,
merged judge findings into, or recorded an outcome for, each with what the metrics must count
for it now (:class:`Counts`, decided once by the merge stage, so counting does not depend on
any exporter, the store included).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping, Protocol, Sequence

from mast_otel.processors.ingest.decode import WireSpan
from mast_otel.processors.model import ArrivedState, Diagnosis, Run, Span
from mast_otel.processors.service.component import Component
from mast_otel.processors.service.store.accounting import Accounting
from mast_otel.processors.service.store.run_steps import StepRow, capped_steps_json, pointed_at, step_rows

Change = Literal["diagnosis", "findings", "outcome"]


@dataclass(frozen=True, slots=True)
class Counts:
    """What to count now for one run: the delta between its accounting before and after."""

    new_run: bool = False  # first diagnosis: mast_traces_total and friends
    modes: tuple[tuple[str, str], ...] = ()  # (mode, source) newly counted
    outcome: str | None = None  # outcome newly counted
    outcome_modes: tuple[str, ...] = ()  # modes newly counted with ``outcome_label``
    outcome_label: str | None = None  # the run's counted outcome
    root_end_ns: int | None = None  # for the diagnosis latency (new runs)
    interventions: tuple[tuple[str, str, str], ...] = ()  # (mode, guard, action) of guard events newly counted


@dataclass(slots=True)
class DiagnosedRun:
    """One run's new state, as every exporter sees it."""

    change: Change
    diagnosis: Diagnosis
    previous: Diagnosis | None  # None: the run's first diagnosis (none in memory or in the store)
    counts: Counts
    accounting: Accounting
    run: Run | None = None  # None when its spans are no longer held
    spans: Sequence[Span] = ()  # the run's spans, for OTLP re-export
    # what the diagnosis changed on ``spans``, as each arrived (``model.arrived_states``, by position):
    # a shared store keeps the spans so, for the replica the rest of the run may go to (None: no shared store)
    arrived: Sequence[ArrivedState] | None = None
    links: Mapping[str, str | None] = field(default_factory=dict)  # parents of the run's spans not kept
    wire: Mapping[str, WireSpan] = field(default_factory=dict)  # span id -> wire form (empty: re-export off)
    exported: set[str] | None = None  # span ids already re-exported (updated by the OTLP exporter)
    steps: list[StepRow] | None = None  # the compact step list, when given (else made from ``run``)
    _step_text: str | None = field(default=None, init=False, repr=False)  # ``step_text``'s answer, made on first ask

    @property
    def trace_id(self) -> str:
        return self.diagnosis.trace_id

    def step_text(self, max_bytes: int) -> str | None:
        """The run's step list as the store writes it, in at most ``max_bytes`` (``capped_steps_json``),
        on a (re)diagnosis; ``None`` for other changes. Made once, as text: rows kept through the
        batch would be walked by each garbage collection meanwhile."""
        if self.change != "diagnosis" or (self.run is None and self.steps is None):
            return None
        if self._step_text is None:
            steps, run = self.steps, self.run
            rows = steps if steps is not None else step_rows(run) if run is not None else []
            self._step_text = capped_steps_json(rows, max_bytes, pointed_at(self.diagnosis))
        return self._step_text


@dataclass(slots=True)
class Batch:
    """Runs finished together; ``settled`` are trace ids no longer in flight."""

    runs: list[DiagnosedRun]
    settled: list[str] = field(default_factory=list)


class DiagnosisExporter(Component, Protocol):
    """An output of diagnoses. ``export`` runs on the sweeper (or a judge worker, or an API
    request) thread: keep it quick, queue slow I/O."""

    name: str

    def export(self, batch: Batch) -> None: ...
