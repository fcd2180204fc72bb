"""The diagnosis store as an exporter, and the reader the API and the web view use."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from datetime import datetime
from typing import Any, Callable, Protocol

from mast_otel.processors.model import Diagnosis
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.metrics import Metrics
from mast_otel.processors.service.outputs.base import Batch, DiagnosedRun
from mast_otel.processors.service.run_steps import RunStep, StepList
from mast_otel.processors.service.span_codec import spans_json
from mast_otel.processors.service.store import DiagnosisStore, ModeCounts, ModelCounts, ModelCountsPage

log = logging.getLogger(__name__)


class DiagnosisReader(Protocol):
    """What the API, the web view and ``mast-otel tools`` read diagnoses through."""

    errors: tuple[type[Exception], ...]  # what a read raises when the store cannot answer (the API says 503)

    def get(self, trace_id: str) -> Diagnosis | None: ...

    def steps(self, trace_id: str) -> StepList | None: ...

    def recent_steps(self, limit: int) -> list[list[RunStep]]: ...

    def query(self, *, model: str | None = None, agent: str | None = None, mode: str | None = None,
              outcome: str | None = None, service: str | None = None, since: float | datetime | None = None,
              until: float | datetime | None = None, fatal: bool | None = None, limit: int = 50,
              offset: int = 0) -> list[Diagnosis]: ...

    def count(self, *, model: str | None = None, agent: str | None = None, mode: str | None = None,
              outcome: str | None = None, service: str | None = None, since: float | datetime | None = None,
              until: float | datetime | None = None, fatal: bool | None = None) -> int: ...

    def counts(self, *, since: float | datetime | None = None, until: float | datetime | None = None,
               latest: int | None = None) -> tuple[list[ModelCounts], list[ModeCounts]]: ...

    def model_counts_page(self, *, since: float | datetime | None = None, until: float | datetime | None = None,
                          model: str | None = None, unnamed: bool = False, limit: int = 50,
                          offset: int = 0) -> ModelCountsPage: ...


class StoreExporter(Lifecycle):
    """Saves each batch in one transaction. A store that refuses writes (disk full, read-only)
    is counted (``mast_store_errors_total``) and logged once; the other outputs carry on.

    Diagnoses the store refused are retried with the next batches (the most recent
    ``MAX_UNSAVED``), so they are stored once space returns; until then ``unsaved`` names them
    and the write-ahead log keeps their spans, so a restart diagnoses them again."""

    name = "store"
    MAX_UNSAVED = 1000

    def __init__(self, store: DiagnosisStore, metrics: Metrics, max_step_list_bytes: int = 1024 * 1024,
                 prune_interval_seconds: float = 300.0) -> None:
        self.store = store
        self.metrics = metrics
        self.max_step_list_bytes = max_step_list_bytes
        self.prune_interval_seconds = prune_interval_seconds
        self._failed = False
        self._unsaved: OrderedDict[str, DiagnosedRun] = OrderedDict()
        self._recovered: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._pruner: threading.Thread | None = None

    def _start(self) -> None:
        # saves prune every store.prune_every runs; this pass covers a replica that receives few
        self._pruner = threading.Thread(target=self._prune_periodically, name="mast-store-prune", daemon=True)
        self._pruner.start()

    def _prune_periodically(self) -> None:
        while not self._stop.wait(self.prune_interval_seconds):
            self.write("prune", self.store.prune)

    def write(self, operation: str, fn: Callable[..., Any], *args: Any) -> bool:
        """Run one store write; ``False`` (counted, logged once) when the store refused it."""
        try:
            fn(*args)
            return True
        except self.store.errors as exc:
            self.metrics.store_errors_total.labels(operation).inc()
            if not self._failed:
                self._failed = True
                log.error("the diagnosis store %s refused a write (%s: %s); ingest, metrics and re-export continue, "
                          "diagnoses are not stored while this lasts (see mast_store_errors_total)",
                          self.store.where, type(exc).__name__, exc)
            return False

    def export(self, batch: Batch) -> None:
        with self._lock:
            for item in batch.runs:  # a newer state of a run replaces the one waiting for a retry
                self._unsaved.pop(item.trace_id, None)
            retried = list(self._unsaved.values())
            runs = [*retried, *batch.runs]
            saves = [(item.diagnosis, item.accounting) for item in runs]
            steps = {item.trace_id: text for item in runs if (text := item.step_text(self.max_step_list_bytes)) is not None}
            first = {item.trace_id for item in runs if item.previous is None}
            spans = {item.trace_id: spans_json(item.spans) for item in runs
                     if item.change == "diagnosis" and item.spans} if self.store.keeps_spans else None
            if self.write("save", lambda: self.store.save_many(saves, steps, first=first, span_texts=spans)):
                self._recovered += [item.trace_id for item in retried]
                self._unsaved.clear()
                return
            for item in batch.runs:
                self._unsaved[item.trace_id] = item
            while len(self._unsaved) > self.MAX_UNSAVED:
                self._unsaved.popitem(last=False)

    @property
    def unsaved(self) -> set[str]:
        """Runs whose latest diagnosis the store has not taken yet."""
        with self._lock:
            return set(self._unsaved)

    def take_recovered(self) -> list[str]:
        """Runs stored by a retry since the last call."""
        with self._lock:
            recovered, self._recovered = self._recovered, []
        return recovered

    def _shutdown(self, timeout: float) -> None:
        self._stop.set()
        if self._pruner is not None:
            self._pruner.join(timeout)
        self.store.close()
