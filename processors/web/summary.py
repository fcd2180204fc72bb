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
from mast_otel.processors.service.store.diagnoses import ModeCounts, ModelCounts
from mast_otel.processors.severity_from_outcomes import UNKNOWN_MODEL
from mast_otel.processors.taxonomy import MODE_IDS


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
    mode_outcome_runs: Counter = field(default_factory=Counter)  # (mode, outcome) -> runs showing it
    models: int = 1  # models folded into this row (the overview's "other models" row)

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
        """Share of runs with at least one fatal-rated mode (a mode's severity, not the run's outcome)."""
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
        s.mode_outcome_runs.update((m, d.outcome) for m in modes)
        if d.outcome == "success":
            s.successes += 1
        elif d.outcome == "failure":
            s.failures += 1
            s.modes_in_failed_runs += len(modes)
    return [by_model[k] for k in sorted(by_model)]


def from_counts(models: Iterable[ModelCounts], modes: Iterable[ModeCounts]) -> list[ModelSummary]:
    """The same summaries as :func:`summarize`, from the store's aggregated counts."""
    by_model: dict[str, ModelSummary] = {}
    for c in models:
        name = c.model or UNKNOWN_MODEL
        s = by_model.setdefault(name, ModelSummary(name))
        s.runs += c.runs
        s.successes += c.successes or 0
        s.failures += c.failures or 0
        s.fatal_runs += c.fatal_runs or 0
        s.modes_in_failed_runs += c.modes_in_failed_runs or 0
    for mc in modes:
        s = by_model.setdefault(mc.model or UNKNOWN_MODEL, ModelSummary(mc.model or UNKNOWN_MODEL))
        s.mode_runs[mc.mode] += mc.runs
        s.mode_outcome_runs[(mc.mode, mc.outcome)] += mc.runs
    return [by_model[k] for k in sorted(by_model)]


def fold(summaries: Iterable[ModelSummary], name: str) -> ModelSummary:
    """Many models as one row (their runs and counts added up)."""
    out = ModelSummary(name, models=0)
    for s in summaries:
        out.models += s.models
        out.runs += s.runs
        out.successes += s.successes
        out.failures += s.failures
        out.fatal_runs += s.fatal_runs
        out.modes_in_failed_runs += s.modes_in_failed_runs
        out.mode_runs.update(s.mode_runs)
        out.mode_outcome_runs.update(s.mode_outcome_runs)
    return out


@dataclass
class ModelPage:
    """One page of models, busiest first, and every other model folded into one row."""

    shown: list[ModelSummary]
    others: ModelSummary | None
    page: int
    pages: int
    total_models: int


def page_of_models(summaries: list[ModelSummary], page: int, per_page: int) -> ModelPage:
    """Models ranked by runs (then name); page ``page`` (from 1) of ``per_page`` models."""
    ranked = sorted(summaries, key=lambda s: (-s.runs, s.model))
    pages = max(1, -(-len(ranked) // per_page))
    page = min(max(page, 1), pages)
    lo, hi = (page - 1) * per_page, page * per_page
    rest = ranked[:lo] + ranked[hi:]
    others = fold(rest, f"{len(rest)} other models") if rest else None
    return ModelPage(ranked[lo:hi], others, page, pages, len(ranked))


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
