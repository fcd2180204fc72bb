"""The SQLite diagnosis store as an exporter, and the reader the API and the web view use."""

from __future__ import annotations

import logging
import sqlite3
from datetime import datetime
from typing import Any, Callable, Iterable, Protocol

from mast_otel.processors.model import Diagnosis
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.metrics import Metrics
from mast_otel.processors.service.outputs.base import Batch
from mast_otel.processors.service.run_steps import RunStep
from mast_otel.processors.service.store import DiagnosisStore, ModeCounts, ModelCounts

log = logging.getLogger(__name__)


class DiagnosisReader(Protocol):
    """What the API, the web view and ``mast-otel tools`` read diagnoses through."""

    def get(self, trace_id: str) -> Diagnosis | None: ...

    def steps(self, trace_id: str) -> list[RunStep] | None: ...

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


class StoreExporter(Lifecycle):
    """Saves each batch in one transaction. A store that refuses writes (disk full, read-only)
    is counted (``mast_store_errors_total``) and logged once; the other outputs carry on."""

    name = "store"

    def __init__(self, store: DiagnosisStore, metrics: Metrics) -> None:
        self.store = store
        self.metrics = metrics
        self._failed = False

    def write(self, operation: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except sqlite3.Error as exc:
            self.metrics.store_errors_total.labels(operation).inc()
            if not self._failed:
                self._failed = True
                log.error("the diagnosis store %s refused a write (%s: %s); ingest, metrics and re-export continue, "
                          "diagnoses are not stored while this lasts (see mast_store_errors_total)",
                          self.store.path, type(exc).__name__, exc)
            return None

    # --- the in-flight ledger (receivers acknowledge only what is recorded here) -------------
    def track_in_flight(self, trace_ids: Iterable[str]) -> None:
        self.write("track_in_flight", self.store.track_in_flight, trace_ids)

    def take_in_flight(self) -> list[str]:
        return self.write("take_in_flight", self.store.take_in_flight) or []

    def export(self, batch: Batch) -> None:
        saves = [(item.diagnosis, item.accounting) for item in batch.runs]
        steps = {item.trace_id: listed for item in batch.runs if (listed := item.step_list()) is not None}
        self.write("save", self.store.save_many, saves, batch.settled, steps)

    def _shutdown(self, timeout: float) -> None:
        self.store.close()
