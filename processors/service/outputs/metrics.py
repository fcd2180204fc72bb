"""Prometheus counting of diagnoses, from the :class:`Counts` the merge stage decided."""

from __future__ import annotations

from collections import Counter

from mast_otel.processors import taxonomy
from mast_otel.processors.config import DetectionConfig
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.outputs.base import Batch


class MetricsExporter(Lifecycle):
    """Counts runs, modes and outcomes by the documented rules (once per run, once per (run, mode))."""

    name = "prometheus"

    def __init__(self, metrics: Metrics, detection: DetectionConfig) -> None:
        self.metrics = metrics
        self.overrides = detection.severity_overrides
        # Labelled children by (metric, labels): prometheus_client's ``labels()`` validates and
        # locks on every call, and the label sets repeat (label values are bounded).
        self._children: dict[tuple[object, tuple[str, ...]], object] = {}
        # A mode's taxonomy labels (name, category, severity after overrides): fixed per process.
        self._mode_labels: dict[str, tuple[str, str, str]] = {}

    def _mode(self, mode: str) -> tuple[str, str, str]:
        labels = self._mode_labels.get(mode)
        if labels is None:
            info = taxonomy.get(mode)
            labels = self._mode_labels[mode] = (info.name, info.category, taxonomy.severity(mode, self.overrides))
        return labels

    def _child(self, metric, *labels: str):
        key = (metric, labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def export(self, batch: Batch) -> None:
        """Count the batch: each counter child once, by the number of its increments in the batch
        (an increment takes the child's lock; a batch repeats a few label sets many times)."""
        m = self.metrics
        increments: Counter[tuple[object, tuple[str, ...]]] = Counter()
        for item in batch.runs:
            c, d = item.counts, item.diagnosis
            if not (c.new_run or c.modes or c.outcome or c.outcome_modes or c.interventions):
                continue
            labels = m.run_labels(d.service_name, d.agent, d.model)
            if c.new_run:
                increments[m.traces_total, labels] += 1
                self._child(m.failure_modes_per_trace, *labels).observe(len(d.modes))
                end_ns = c.root_end_ns or d.ended_ns
                if end_ns:
                    m.diagnosis_latency_seconds.observe(max(0.0, d.diagnosed_at - end_ns / 1e9))
            for mode, source in c.modes:
                increments[m.failure_mode_traces_total, (*labels, mode, *self._mode(mode), source)] += 1
                # and under the agent it concerns (a team's member; the run's agent otherwise)
                agent = next((f.agent for f in d.findings if f.agent and f.mode == mode and f.source == source), None)
                member = labels[1] if agent is None else m.bounded("agent", agent)
                increments[m.failure_mode_agents_total, (labels[0], labels[1], member, labels[2], mode)] += 1
            if c.outcome is not None:
                increments[m.outcomes_total, (*labels, c.outcome)] += 1
            outcome = c.outcome_label
            for mode in c.outcome_modes if outcome is not None else ():  # counted with an outcome only
                _, category, severity = self._mode(mode)
                increments[m.failure_mode_outcomes_total, (*labels, mode, category, severity, outcome or "")] += 1
            for mode, guard, action in c.interventions:
                increments[m.guard_interventions_total, (*labels, mode, guard, action)] += 1
        for (metric, values), n in increments.items():
            self._child(metric, *values).inc(n)
