"""The diagnosis store as an exporter, and the reader the API and the web view use."""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections import OrderedDict
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from mast_otel.processors.model import Diagnosis
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.outputs.base import Batch, Counts, DiagnosedRun
from mast_otel.processors.service.store.run_steps import RunStep, StepList
from mast_otel.processors.service.store.span_codec import spans_json
from mast_otel.processors.service.store.diagnoses import DiagnosisStore, ModeCounts, ModelCounts, ModelCountsPage

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
              offset: int = 0, trace_ids: Sequence[str] | None = None) -> list[Diagnosis]: ...

    def count(self, *, model: str | None = None, agent: str | None = None, mode: str | None = None,
              outcome: str | None = None, service: str | None = None, since: float | datetime | None = None,
              until: float | datetime | None = None, fatal: bool | None = None,
              trace_ids: Sequence[str] | None = None) -> int: ...

    def counts(self, *, since: float | datetime | None = None, until: float | datetime | None = None,
               latest: int | None = None) -> tuple[list[ModelCounts], list[ModeCounts]]: ...

    def model_counts_page(self, *, since: float | datetime | None = None, until: float | datetime | None = None,
                          model: str | None = None, unnamed: bool = False, limit: int = 50,
                          offset: int = 0) -> ModelCountsPage: ...


class StoreExporter(Lifecycle):
    """Saves each batch in one transaction. A store that refuses writes (disk full, read-only,
    a database gone away) is counted (``mast_store_errors_total``) and logged once; the other
    outputs carry on.

    Diagnoses the store refused wait in ``unsaved`` (the most recent ``MAX_UNSAVED``) and are
    written again with the next batches and on a timer (``retry_interval_seconds``, doubling to
    ``MAX_RETRY_PAUSE``), so they are stored once the store is back even when no traffic comes;
    meanwhile the write-ahead log keeps their spans, so a restart diagnoses them again.

    When a save fails while the store answers, each run is saved on its own: a run the store
    refuses by itself (a value it cannot hold) fails only its own save, and after
    ``max_save_attempts`` such failures it is set aside (appended to ``set_aside_path`` with its
    spans, counted in ``mast_store_set_aside_total``, logged once), so it never blocks the
    runs behind it.

    The store decides when a run is counted: a run whose save failed has its counts held back
    (the metrics exporter, after this one, sees none) and handed to ``count_later`` once it is
    stored or set aside. A replica restarted meanwhile never counted it, so the run it
    diagnoses again from its log is counted once, by the process that stores it."""

    name = "store"
    MAX_UNSAVED = 1000
    MAX_RETRY_PAUSE = 30.0

    def __init__(self, store: DiagnosisStore, metrics: Metrics, max_step_list_bytes: int = 1024 * 1024,
                 prune_interval_seconds: float = 300.0, *, retry_interval_seconds: float = 1.0,
                 max_save_attempts: int = 5, set_aside_path: str | Path = "mast-otel.set-aside.jsonl") -> None:
        self.store = store
        self.metrics = metrics
        self.max_step_list_bytes = max_step_list_bytes
        self.prune_interval_seconds = prune_interval_seconds
        self.retry_interval_seconds = retry_interval_seconds
        self.max_save_attempts = max_save_attempts
        self.set_aside_path = Path(set_aside_path)
        self._failed = False
        self._unsaved: OrderedDict[str, DiagnosedRun] = OrderedDict()
        self._attempts: dict[str, int] = {}  # trace id -> saves it failed on its own
        self._recovered: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._waiting = threading.Event()  # set while runs wait in ``unsaved``
        self._pruner: threading.Thread | None = None
        self._retrier: threading.Thread | None = None
        self.count_later: Callable[[Batch], None] | None = None  # the metrics' count of runs stored late
        self._held: dict[str, Counts] = {}  # trace id -> counts held back until the run is stored

    def _start(self) -> None:
        # saves prune every store.prune_every runs; this pass covers a replica that receives few
        self._pruner = threading.Thread(target=self._prune_periodically, name="mast-store-prune", daemon=True)
        self._pruner.start()
        self._retrier = threading.Thread(target=self._retry_periodically, name="mast-store-retry", daemon=True)
        self._retrier.start()

    def _prune_periodically(self) -> None:
        while not self._stop.wait(self.prune_interval_seconds):
            self.write("prune", self.store.prune)

    def _retry_periodically(self) -> None:
        """Write the refused diagnoses again, backing off while the store keeps refusing."""
        pause = self.retry_interval_seconds
        while not self._stop.is_set():
            self._waiting.wait(self.prune_interval_seconds)
            if self._stop.wait(pause):
                return
            with self._lock:
                if not self._unsaved:
                    self._waiting.clear()
                    pause = self.retry_interval_seconds
                    continue
                stored = self._save([])
            pause = self.retry_interval_seconds if stored else min(pause * 2, self.MAX_RETRY_PAUSE)

    def write(self, operation: str, fn: Callable[..., Any], *args: Any) -> bool:
        """Run one store write; ``False`` (counted, logged once) when the store refused it."""
        try:
            fn(*args)
        except self.store.errors as exc:
            self.metrics.store_errors_total.labels(operation).inc()
            if not self._failed and not isinstance(exc, self.store.data_errors):  # a refused value: see _refused
                self._failed = True
                log.error("the diagnosis store %s refused a write (%s: %s); ingest, metrics and re-export continue, "
                          "diagnoses are stored once it takes writes again (see mast_store_errors_total)",
                          self.store.where, type(exc).__name__, _first_line(exc))
            return False
        if self._failed and operation == "save":
            self._failed = False
            log.warning("the diagnosis store %s takes writes again", self.store.where)
        return True

    def _save_runs(self, runs: list[DiagnosedRun]) -> None:
        saves = [(item.diagnosis, item.accounting) for item in runs]
        steps = {item.trace_id: text for item in runs if (text := item.step_text(self.max_step_list_bytes)) is not None}
        first = {item.trace_id for item in runs if item.previous is None}
        spans = {item.trace_id: spans_json(item.spans, item.links, item.arrived)
                 for item in runs if item.change == "diagnosis" and item.spans} if self.store.keeps_spans else None
        self.store.save_many(saves, steps, first=first, span_texts=spans)

    def export(self, batch: Batch) -> None:
        with self._lock:
            self._save(batch.runs)

    def _save(self, new: list[DiagnosedRun]) -> bool:
        """Save ``new`` with the runs waiting for a retry (the lock held); whether all were stored."""
        for item in new:  # a newer state of a run replaces the one waiting for a retry
            self._unsaved.pop(item.trace_id, None)
        retried = list(self._unsaved.values())
        runs = [*retried, *new]
        if not runs:
            return True
        if self.write("save", self._save_runs, runs):
            self._stored(runs, retried)
            return True
        for item in new:
            self._unsaved[item.trace_id] = item
            if self.count_later is not None:
                self._hold(item)
        if self._store_answers():  # the store is up: some run(s) of these it may refuse on their own
            self._save_one_by_one(runs, retried)
        while len(self._unsaved) > self.MAX_UNSAVED:  # given up on: a restart diagnoses (and counts) it again
            dropped, _ = self._unsaved.popitem(last=False)
            self._attempts.pop(dropped, None)
            self._held.pop(dropped, None)
        if self._unsaved:
            self._waiting.set()
        return not self._unsaved

    def _save_one_by_one(self, runs: list[DiagnosedRun], retried: list[DiagnosedRun]) -> None:
        """Each run in its own transaction. A failure is the run's own when the store refused its
        data, or took another run meanwhile; otherwise (a disk full, say) nothing is held against it."""
        refused: list[tuple[DiagnosedRun, Exception]] = []
        took_any = False
        for item in runs:
            try:
                self._save_runs([item])
            except self.store.errors as exc:
                refused.append((item, exc))
            else:
                took_any = True
                self._stored([item], retried)
        for item, error in refused:
            if took_any or isinstance(error, self.store.data_errors):
                self._refused(item, error)

    def _hold(self, item: DiagnosedRun) -> None:
        """Keep the run's counts until it is stored (added to any held for an earlier state of it)."""
        held = self._held.get(item.trace_id)
        c = item.counts
        if held is not None:
            c = Counts(held.new_run or c.new_run, held.modes + c.modes, held.outcome or c.outcome,
                       held.outcome_modes + c.outcome_modes, c.outcome_label or held.outcome_label,
                       held.root_end_ns or c.root_end_ns, held.interventions + c.interventions)
        self._held[item.trace_id] = c
        item.counts = Counts()

    def _release(self, items: list[DiagnosedRun]) -> None:
        """Count the runs whose counts were held, now that they are stored (or set aside)."""
        if self.count_later is None:
            return
        batch = [dataclasses.replace(item, counts=held) for item in items
                 if (held := self._held.pop(item.trace_id, None)) is not None]
        if batch:
            try:
                self.count_later(Batch(batch))
            except Exception:
                log.exception("counting %d runs stored late failed", len(batch))

    def _stored(self, runs: list[DiagnosedRun], retried: list[DiagnosedRun]) -> None:
        waited = {item.trace_id for item in retried}
        for item in runs:
            self._unsaved.pop(item.trace_id, None)
            self._attempts.pop(item.trace_id, None)
            if item.trace_id in waited:
                self._recovered.append(item.trace_id)
        self._release(runs)

    def _store_answers(self) -> bool:
        try:
            self.store.ping()
            return True
        except self.store.errors:
            return False

    def _refused(self, item: DiagnosedRun, exc: Exception) -> None:
        """One run the store refused while it took others: set aside after ``max_save_attempts``."""
        trace_id = item.trace_id
        attempts = self._attempts[trace_id] = self._attempts.get(trace_id, 0) + 1
        if attempts < self.max_save_attempts:
            return
        self._unsaved.pop(trace_id, None)
        self._attempts.pop(trace_id, None)
        self._release([item])  # diagnosed once: counted once, stored or not
        self.metrics.store_set_aside_total.inc()
        kept = self._keep_on_disk(item, exc)
        log.error("the diagnosis store refused run %s on its own %d times (%s: %s); set aside%s so the runs behind it "
                  "are stored (mast_store_set_aside_total)", trace_id, attempts, type(exc).__name__, _first_line(exc),
                  f" in {self.set_aside_path}" if kept else " (and could not be written to disk)")
        self._recovered.append(trace_id)  # settled in the log: replaying it would only fail again

    def _keep_on_disk(self, item: DiagnosedRun, exc: Exception) -> bool:
        d = item.diagnosis
        record = {"trace_id": d.trace_id, "set_aside_at": time.time(), "error": f"{type(exc).__name__}: {_first_line(exc)}",
                  "service_name": d.service_name, "agent": d.agent, "model": d.model, "revision": d.revision,
                  "modes": list(d.modes), "spans": json.loads(spans_json(item.spans)) if item.spans else []}
        try:
            self.set_aside_path.parent.mkdir(parents=True, exist_ok=True)
            with self.set_aside_path.open("a", encoding="utf-8", errors="backslashreplace") as f:
                f.write(json.dumps(record, separators=(",", ":")) + "\n")
            return True
        except (OSError, ValueError):
            log.exception("could not write the set-aside run %s to %s", d.trace_id, self.set_aside_path)
            return False

    @property
    def unsaved(self) -> set[str]:
        """Runs whose latest diagnosis the store has not taken yet."""
        with self._lock:
            return set(self._unsaved)

    def take_recovered(self) -> list[str]:
        """Runs stored by a retry (or set aside) since the last call."""
        with self._lock:
            recovered, self._recovered = self._recovered, []
        return recovered

    def _shutdown(self, timeout: float) -> None:
        self._stop.set()
        self._waiting.set()
        for thread in (self._pruner, self._retrier):
            if thread is not None:
                thread.join(timeout)
        self.store.close()


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
