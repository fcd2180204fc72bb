"""Per-model figures from stored diagnoses: what the overview page and the demo table show.

Pure functions over :class:`Diagnosis` records, so the web view, the demo's table and the
tests that compare them with the API all compute "success rate" or "modes per failed run"
the same way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from mast_otel.processors.model import Diagnosis, mode_sort_key
from mast_otel.processors.taxonomy import MODE_IDS

UNKNOWN_MODEL = "(unknown)"


@dataclass
class ModelSummary:
    """One model's runs, outcomes and failure modes."""

    model: str
    runs: int = 0
    successes: int = 0
    failures: int = 0
    fatal_runs: int = 0
    modes_in_failed_runs: int = 0
    mode_runs: Counter = field(default_factory=Counter)  # mode -> runs showing it

    @property
    def known_outcomes(self) -> int:
        return self.successes + self.failures

    @property
    def success_rate(self) -> float | None:
        """Share of runs with a known outcome that succeeded (``None`` when none is known)."""
        return self.successes / self.known_outcomes if self.known_outcomes else None

    @property
    def modes_per_failed_run(self) -> float | None:
        return self.modes_in_failed_runs / self.failures if self.failures else None

    @property
    def fatal_share(self) -> float:
        return self.fatal_runs / self.runs if self.runs else 0.0

    def mode_rate(self, mode: str) -> float:
        """Share of this model's runs in which ``mode`` was found."""
        return self.mode_runs[mode] / self.runs if self.runs else 0.0

    def top_modes(self, n: int = 3) -> list[tuple[str, int]]:
        return sorted(self.mode_runs.items(), key=lambda kv: (-kv[1], mode_sort_key(kv[0])))[:n]


def summarize(diagnoses: Iterable[Diagnosis]) -> list[ModelSummary]:
    """One summary per model, models in name order."""
    by_model: dict[str, ModelSummary] = {}
    for d in diagnoses:
        name = d.model or UNKNOWN_MODEL
        s = by_model.setdefault(name, ModelSummary(name))
        modes = d.modes
        s.runs += 1
        s.fatal_runs += d.fatal
        s.mode_runs.update(modes)
        if d.outcome == "success":
            s.successes += 1
        elif d.outcome == "failure":
            s.failures += 1
            s.modes_in_failed_runs += len(modes)
    return [by_model[k] for k in sorted(by_model)]


def modes_seen(summaries: Iterable[ModelSummary]) -> list[str]:
    """Every taxonomy mode, in id order (columns of the heatmap; unseen modes included)."""
    seen = set(MODE_IDS)
    for s in summaries:
        seen.update(s.mode_runs)
    return sorted(seen, key=mode_sort_key)


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def decimal(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"
