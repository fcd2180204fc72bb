"""Severity read from the user's own outcomes: how much more often a mode shows in failed runs.

The default severities come from a published analysis of other people's agents. Where run
outcomes are known, the same reading can be done on the user's data: a mode's prevalence in
failed runs against its prevalence in successful runs, and their ratio (the lift) with a
confidence interval. A mode whose lift is surely above 1 separates failure from success
(fatal); a mode also seen in successful runs without that separation is recoverable. Pure
functions; the store supplies the counts.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from collections import Counter
from typing import Callable, Iterable

from mast_otel.processors.service.store.diagnoses import ModeCounts, ModelCounts, ModelCountsPage
from mast_otel.processors.taxonomy import MODE_IDS, Severity

ALL_MODELS = "(all models)"
UNKNOWN_MODEL = "(unknown)"

Z_95 = 1.959963984540054  # the two-sided 95% normal quantile


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


def wilson(successes: int, trials: int, z: float = Z_95) -> Interval | None:
    """Wilson score interval for a proportion; ``None`` without trials."""
    if trials <= 0:
        return None
    if not 0 <= successes <= trials:
        raise ValueError(f"{successes} of {trials} is not a proportion")
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    return Interval(max(0.0, centre - half), min(1.0, centre + half))


def lift_interval(in_failed: int, failed: int, in_successful: int, successful: int,
                  z: float = Z_95) -> tuple[float, Interval] | None:
    """The ratio of a mode's prevalence in failed runs to that in successful runs, with the
    log-ratio (Katz) interval. A zero count gets 0.5 added to every cell (the usual
    continuity correction), so a mode never seen in successful runs still gets a finite,
    wide interval. ``None`` when either group is empty or the mode was never seen."""
    if failed <= 0 or successful <= 0 or in_failed + in_successful == 0:
        return None
    for k, n in ((in_failed, failed), (in_successful, successful)):
        if not 0 <= k <= n:
            raise ValueError(f"{k} of {n} is not a proportion")
    a, n1, c, n2 = float(in_failed), float(failed), float(in_successful), float(successful)
    if a == 0 or c == 0:
        a, n1, c, n2 = a + 0.5, n1 + 1, c + 0.5, n2 + 1
    ratio = (a / n1) / (c / n2)
    se = math.sqrt(max(1 / a - 1 / n1 + 1 / c - 1 / n2, 0.0))
    log_ratio = math.log(ratio)
    return ratio, Interval(math.exp(log_ratio - z * se), math.exp(log_ratio + z * se))


@dataclass(frozen=True)
class ModeEvidence:
    """One mode's counts in one group of runs (a model, or all models), and what they suggest."""

    mode: str
    failed: int  # runs with outcome failure
    successful: int  # runs with outcome success
    in_failed: int  # of those, runs showing the mode
    in_successful: int
    default_severity: Severity
    min_outcomes: int

    @property
    def prevalence_failed(self) -> float | None:
        return self.in_failed / self.failed if self.failed else None

    @property
    def prevalence_successful(self) -> float | None:
        return self.in_successful / self.successful if self.successful else None

    @property
    def failed_interval(self) -> Interval | None:
        """Wilson 95% interval of the prevalence in failed runs."""
        return wilson(self.in_failed, self.failed)

    @property
    def successful_interval(self) -> Interval | None:
        return wilson(self.in_successful, self.successful)

    @property
    def enough(self) -> bool:
        """At least ``min_outcomes`` runs with a known outcome, some failed and some successful."""
        return self.failed + self.successful >= self.min_outcomes and self.failed > 0 and self.successful > 0

    @property
    def lift(self) -> tuple[float, Interval] | None:
        return lift_interval(self.in_failed, self.failed, self.in_successful, self.successful) if self.enough else None

    @property
    def suggested(self) -> Severity | None:
        """``fatal`` when the lift's interval lies above 1, ``recoverable`` when the mode also
        shows in successful runs without that, else no suggestion (too few runs, or unseen)."""
        lift = self.lift
        if lift is None:
            return None
        if lift[1].low > 1:
            return "fatal"
        if self.in_successful > 0:
            return "recoverable"
        return None


def adopted_overrides(evidence: list[ModeEvidence], current: dict[str, str]) -> dict[str, str]:
    """The ``detection.severity_overrides`` map that adopts every suggestion, keeping the
    user's other overrides; empty when nothing would change."""
    changes = {e.mode: e.suggested for e in evidence if e.suggested and e.suggested != e.default_severity}
    return dict(sorted({**current, **changes}.items())) if changes else {}


def config_lines(overrides: dict[str, str]) -> tuple[str, str]:
    """The same overrides as a YAML line (under ``detection:``) and as an environment variable."""
    yaml = "severity_overrides: {" + ", ".join(f'"{m}": {s}' for m, s in overrides.items()) + "}"
    env = "MAST_OTEL_DETECTION__SEVERITY_OVERRIDES='" + json.dumps(overrides, separators=(",", ":")) + "'"
    return yaml, env


def evidence_by_model(models: Iterable[ModelCounts], modes: Iterable[ModeCounts], severity_of: Callable[[str], Severity],
                      min_outcomes: int) -> dict[str, list[ModeEvidence]]:
    """Every mode's evidence for all models together (first) and for each model, in name order."""
    outcomes: Counter = Counter()  # (model, outcome) -> runs
    shown: Counter = Counter()  # (model, mode, outcome) -> runs
    for c in models:
        name = c.model or UNKNOWN_MODEL
        for key in (name, ALL_MODELS):
            outcomes[(key, "failure")] += c.failures or 0
            outcomes[(key, "success")] += c.successes or 0
    for mc in modes:
        for key in (mc.model or UNKNOWN_MODEL, ALL_MODELS):
            shown[(key, mc.mode, mc.outcome)] += mc.runs
    names = [ALL_MODELS] + sorted({k for k, _ in outcomes} - {ALL_MODELS})
    return {name: [ModeEvidence(mode=m, failed=outcomes[(name, "failure")], successful=outcomes[(name, "success")],
                                in_failed=shown[(name, m, "failure")], in_successful=shown[(name, m, "success")],
                                default_severity=severity_of(m), min_outcomes=min_outcomes)
                   for m in MODE_IDS]
            for name in names}


def evidence_of_page(page: ModelCountsPage, severity_of: Callable[[str], Severity],
                     min_outcomes: int) -> dict[str, list[ModeEvidence]]:
    """Every mode's evidence for all models together (first) and for each model of the page,
    in the page's order (most runs with a known outcome first)."""
    outcomes: Counter = Counter()  # (model, outcome) -> runs
    shown: Counter = Counter()  # (model, mode, outcome) -> runs
    outcomes[(ALL_MODELS, "failure")], outcomes[(ALL_MODELS, "success")] = page.total.failures, page.total.successes
    for mc in page.total_modes:
        shown[(ALL_MODELS, mc.mode, mc.outcome)] += mc.runs
    names = [ALL_MODELS]
    for c in page.models:
        name = c.model or UNKNOWN_MODEL
        names.append(name)
        outcomes[(name, "failure")], outcomes[(name, "success")] = c.failures or 0, c.successes or 0
    for mc in page.modes:
        shown[(mc.model or UNKNOWN_MODEL, mc.mode, mc.outcome)] += mc.runs
    return {name: [ModeEvidence(mode=m, failed=outcomes[(name, "failure")], successful=outcomes[(name, "success")],
                                in_failed=shown[(name, m, "failure")], in_successful=shown[(name, m, "success")],
                                default_severity=severity_of(m), min_outcomes=min_outcomes)
                   for m in MODE_IDS]
            for name in names}
