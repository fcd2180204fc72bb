"""Agreement between predicted and labelled failure modes: precision, recall, F1, Cohen's kappa.

Pure arithmetic over per-run (labels, predictions) pairs. A mode is scored only where it has
support (labelled positives) or predictions: a mode nobody labelled and nothing predicted says
nothing about the detector, and counting it as perfect agreement inflated averages before. The
macro average runs over the scored modes the detector covers; there is no pooled (micro)
kappa, which mixes modes of very different prevalence into one chance rate.

Every figure carries a 95% interval: Wilson score intervals for precision and recall (they are
proportions), percentile bootstrap intervals over runs for F1, kappa and the macro averages
(resampling whole runs, so modes that co-occur stay together; fixed seed, so a rerun prints
the same interval). A label of ``None`` for a mode (e.g. a mode a scenario allows but does not
expect) leaves that run out of that mode's cell counts.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

Z95 = 1.959963984540054
METRICS = ("precision", "recall", "f1", "kappa")
DEFAULT_RESAMPLES = 400
SEED = 20250304

Interval = tuple[float, float]


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def wilson(successes: int, trials: int) -> Interval | None:
    """The Wilson score interval (95%) of a proportion; ``None`` without trials."""
    if not trials:
        return None
    p = successes / trials
    denom = 1 + Z95**2 / trials
    centre = (p + Z95**2 / (2 * trials)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / trials + Z95**2 / (4 * trials**2)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(slots=True)
class Confusion:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, label: bool, predicted: bool) -> None:
        if label and predicted:
            self.tp += 1
        elif predicted:
            self.fp += 1
        elif label:
            self.fn += 1
        else:
            self.tn += 1

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    @property
    def support(self) -> int:
        return self.tp + self.fn

    @property
    def predicted(self) -> int:
        return self.tp + self.fp

    @property
    def scored(self) -> bool:
        """Whether the mode says anything: someone labelled it or the detector predicted it."""
        return bool(self.support or self.predicted)

    @property
    def precision(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float | None:
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> float | None:
        return _ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn)

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa: agreement beyond what the two marginal rates give by chance.

        Undefined (``None``) for an unscored mode and where chance agreement is total (both
        sides put every run in the same class), where it is 0/0.
        """
        n = self.n
        if not n or not self.scored:
            return None
        observed = (self.tp + self.tn) / n
        chance = (self.predicted * self.support + (self.fn + self.tn) * (self.fp + self.tn)) / (n * n)
        if chance >= 1:
            return None
        return (observed - chance) / (1 - chance)


@dataclass(slots=True)
class ModeScore:
    confusion: Confusion
    intervals: dict[str, Interval | None] = field(default_factory=dict)

    def as_dict(self) -> dict:
        c = self.confusion
        out: dict = {name: getattr(c, name) for name in METRICS}
        out.update({f"{name}_ci": _ci(self.intervals.get(name)) for name in METRICS})
        out.update(support=c.support, predicted=c.predicted, tp=c.tp, fp=c.fp, fn=c.fn, tn=c.tn, scored=c.scored)
        return out


def _ci(interval: Interval | None) -> list[float] | None:
    return None if interval is None else [round(interval[0], 4), round(interval[1], 4)]


@dataclass(slots=True)
class Scores:
    per_mode: dict[str, ModeScore]
    macro_modes: tuple[str, ...]  # scored modes the evaluated detector covers
    macro: dict[str, float | None]
    macro_intervals: dict[str, Interval | None]
    runs: int
    resamples: int

    def as_dict(self) -> dict:
        return {"modes": {m: s.as_dict() for m, s in self.per_mode.items()},
                "macro": {**self.macro, **{f"{k}_ci": _ci(v) for k, v in self.macro_intervals.items()}},
                "macro_modes": list(self.macro_modes),
                "intervals": "95%: Wilson for precision and recall; percentile bootstrap over runs "
                             f"({self.resamples} resamples) for F1, kappa and macro averages"}


def _macro(per_mode: Mapping[str, Confusion], modes: Sequence[str]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name in METRICS:
        values = [v for m in modes if (v := getattr(per_mode[m], name)) is not None]
        out[name] = sum(values) / len(values) if values else None
    return out


def _percentile(values: list[float]) -> Interval | None:
    if len(values) < 2:
        return None
    values = sorted(values)
    lo = values[int(0.025 * (len(values) - 1))]
    hi = values[math.ceil(0.975 * (len(values) - 1))]
    return lo, hi


def score(pairs: Iterable[tuple[Mapping[str, bool | None], Iterable[str]]], modes: Sequence[str],
          macro_modes: Sequence[str] | None = None, *, resamples: int = DEFAULT_RESAMPLES) -> Scores:
    """Score (labels, predicted modes) pairs; a mode missing from a run's labels counts as absent,
    a label of ``None`` leaves the run out of that mode."""
    # per run, per mode: 0 tp, 1 fp, 2 fn, 3 tn, None skipped
    cells: list[list[int | None]] = []
    for labels, predicted in pairs:
        hit = set(predicted)
        row: list[int | None] = []
        for mode in modes:
            label = labels.get(mode, False)
            row.append(None if label is None else (0 if label and mode in hit else 1 if mode in hit else 2 if label else 3))
        cells.append(row)
    full = _count(cells, range(len(cells)), modes)
    covered = macro_modes if macro_modes is not None else modes
    scored = tuple(m for m in covered if m in full and full[m].scored)
    macro = _macro(full, scored)
    boot: dict[str, list[list[float]]] = {m: [[] for _ in METRICS] for m in modes}
    boot_macro: list[list[float]] = [[] for _ in METRICS]
    rng = random.Random(SEED)
    n = len(cells)
    for _ in range(resamples if n else 0):
        sample = _count(cells, rng.choices(range(n), k=n), modes)
        for mode, c in sample.items():
            for i, name in enumerate(("f1", "kappa")):
                if (v := getattr(c, name)) is not None:
                    boot[mode][i].append(v)
        for i, v in enumerate(_macro(sample, scored).values()):
            if v is not None:
                boot_macro[i].append(v)
    per_mode = {}
    for mode, c in full.items():
        intervals = {"precision": wilson(c.tp, c.predicted), "recall": wilson(c.tp, c.support),
                     "f1": _percentile(boot[mode][0]) if c.f1 is not None else None,
                     "kappa": _percentile(boot[mode][1]) if c.kappa is not None else None}
        per_mode[mode] = ModeScore(c, intervals)
    macro_intervals = {name: (_percentile(boot_macro[i]) if macro[name] is not None else None)
                       for i, name in enumerate(METRICS)}
    return Scores(per_mode, scored, macro, macro_intervals, n, resamples)


def _count(cells: list[list[int | None]], indices: Iterable[int], modes: Sequence[str]) -> dict[str, Confusion]:
    counts = [[0, 0, 0, 0] for _ in modes]
    for i in indices:
        for j, cell in enumerate(cells[i]):
            if cell is not None:
                counts[j][cell] += 1
    return {mode: Confusion(*counts[j]) for j, mode in enumerate(modes)}
