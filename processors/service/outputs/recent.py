"""Recent diagnoses in memory: the reader the API and the web view use while the store is off.

An exporter like the others: it keeps the latest diagnosis and step list of the last
``capacity`` runs (oldest dropped first) and answers :class:`DiagnosisReader` reads with the
store's filters and order, so switching the store off loses history, not the API.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import datetime
from typing import Sequence

from mast_otel.processors.model import Diagnosis
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.outputs.base import Batch
from mast_otel.processors.service.store.run_steps import RunStep, StepList, parse_steps
from mast_otel.processors.service.store.diagnoses import ModeCounts, ModelCounts, ModelCountsPage, page_of_counts


def _seconds(value: float | datetime | None) -> float | None:
    return value.timestamp() if isinstance(value, datetime) else value


def _started_ns(d: Diagnosis) -> int:
    """The run's start as the store filters on it (the diagnosis time when the start is unknown)."""
    return d.started_ns if d.started_ns is not None else int(d.diagnosed_at * 1e9)


class RecentDiagnoses(Lifecycle):
    """A bounded, thread-safe map of trace id -> (latest diagnosis, step list as the store keeps it:
    capped JSON text, parsed when read, which is rarer than a run's export)."""

    name = "recent"
    errors: tuple[type[Exception], ...] = ()  # memory always answers

    def __init__(self, capacity: int, max_step_list_bytes: int = 1024 * 1024) -> None:
        if capacity < 1:
            raise ValueError("RecentDiagnoses needs a capacity of at least 1")
        self.capacity = capacity
        self.max_step_list_bytes = max_step_list_bytes
        self._runs: OrderedDict[str, tuple[Diagnosis, str | None]] = OrderedDict()
        self._lock = threading.Lock()

    # --- the exporter side ----------------------------------------------------------------------
    def export(self, batch: Batch) -> None:
        with self._lock:
            runs = self._runs
            for item in batch.runs:
                kept = runs.pop(item.trace_id, None)
                steps = item.step_text(self.max_step_list_bytes)
                runs[item.trace_id] = (item.diagnosis, steps if steps is not None else (kept[1] if kept else None))
            while len(runs) > self.capacity:
                runs.popitem(last=False)

    # --- the reader side (DiagnosisReader) ------------------------------------------------------
    def get(self, trace_id: str) -> Diagnosis | None:
        with self._lock:
            kept = self._runs.get(trace_id)
        return kept[0] if kept is not None else None

    def steps(self, trace_id: str) -> StepList | None:
        with self._lock:
            kept = self._runs.get(trace_id)
        return parse_steps(kept[1]) if kept is not None and kept[1] is not None else None

    def recent_steps(self, limit: int) -> list[list[RunStep]]:
        with self._lock:
            kept = list(self._runs.values())
        kept.sort(key=lambda pair: pair[0].diagnosed_at, reverse=True)
        return [parse_steps(steps) for steps in [steps for _, steps in kept if steps is not None][:limit]]

    def _matching(self, model: str | None, agent: str | None, mode: str | None, outcome: str | None,
                  service: str | None, since: float | datetime | None, until: float | datetime | None,
                  fatal: bool | None, trace_ids: Sequence[str] | None = None) -> list[Diagnosis]:
        start_min, start_max = _seconds(since), _seconds(until)
        low = int(start_min * 1e9) if start_min is not None else None
        high = int(start_max * 1e9) if start_max is not None else None
        with self._lock:
            diagnoses = [d for d, _ in self._runs.values()] if trace_ids is None else [
                self._runs[t][0] for t in dict.fromkeys(trace_ids) if t in self._runs]
        return [
            d for d in diagnoses
            if (model is None or d.model == model) and (agent is None or d.agent == agent)
            and (outcome is None or d.outcome == outcome) and (service is None or d.service_name == service)
            and (fatal is None or d.fatal == fatal) and (mode is None or mode in d.verdicts)
            and (low is None or _started_ns(d) >= low) and (high is None or _started_ns(d) < high)
        ]

    def query(self, *, model: str | None = None, agent: str | None = None, mode: str | None = None,
              outcome: str | None = None, service: str | None = None, since: float | datetime | None = None,
              until: float | datetime | None = None, fatal: bool | None = None, limit: int = 50,
              offset: int = 0, trace_ids: Sequence[str] | None = None) -> list[Diagnosis]:
        """Matching diagnoses, newest first (ties by trace id), as the store orders them."""
        found = self._matching(model, agent, mode, outcome, service, since, until, fatal, trace_ids)
        found.sort(key=lambda d: d.trace_id)
        found.sort(key=lambda d: d.diagnosed_at, reverse=True)
        return found[offset:offset + limit]

    def count(self, *, model: str | None = None, agent: str | None = None, mode: str | None = None,
              outcome: str | None = None, service: str | None = None, since: float | datetime | None = None,
              until: float | datetime | None = None, fatal: bool | None = None,
              trace_ids: Sequence[str] | None = None) -> int:
        return len(self._matching(model, agent, mode, outcome, service, since, until, fatal, trace_ids))

    def counts(self, *, since: float | datetime | None = None, until: float | datetime | None = None,
               latest: int | None = None) -> tuple[list[ModelCounts], list[ModeCounts]]:
        """The store's overview counts, over the ``latest`` matching runs held in memory."""
        window = self.query(since=since, until=until, limit=latest if latest is not None else self.capacity)
        per_model: dict[str | None, list[int]] = {}
        per_mode: dict[tuple[str | None, str, str | None], int] = {}
        for d in window:
            row = per_model.setdefault(d.model, [0, 0, 0, 0, 0])
            modes = d.modes
            failed = d.outcome == "failure"
            row[0] += 1
            row[1] += d.outcome == "success"
            row[2] += failed
            row[3] += int(d.fatal)
            row[4] += len(modes) if failed else 0
            for mode in modes:
                per_mode[(d.model, mode, d.outcome)] = per_mode.get((d.model, mode, d.outcome), 0) + 1
        return ([ModelCounts(model, *row) for model, row in per_model.items()],
                [ModeCounts(*key, runs) for key, runs in per_mode.items()])

    def model_counts_page(self, *, since: float | datetime | None = None, until: float | datetime | None = None,
                          model: str | None = None, unnamed: bool = False, limit: int = 50,
                          offset: int = 0) -> ModelCountsPage:
        """The store's severity counts over the runs held in memory (at most ``capacity``)."""
        return page_of_counts(*self.counts(since=since, until=until), model=model, unnamed=unnamed, limit=limit,
                              offset=offset)
