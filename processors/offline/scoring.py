"""Agreement between predicted and labelled failure modes: precision, recall, F1, Cohen's kappa.

Pure arithmetic over per-run (labels, predictions) pairs. A ratio whose denominator is zero
(no predictions, no positives) is ``None`` per mode and is left out of macro averages, which
average each metric over the covered modes where it is defined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


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
        """Cohen's kappa: agreement beyond what the two marginal rates give by chance."""
        n = self.n
        if not n:
            return None
        observed = (self.tp + self.tn) / n
        chance = (self.predicted * self.support + (self.fn + self.tn) * (self.fp + self.tn)) / (n * n)
        if chance == 1:  # both sides put every run in the same class: they agree perfectly
            return 1.0
        return (observed - chance) / (1 - chance)

    def as_dict(self) -> dict[str, float | int | None]:
        return {"precision": self.precision, "recall": self.recall, "f1": self.f1, "kappa": self.kappa,
                "support": self.support, "predicted": self.predicted, "tp": self.tp, "fp": self.fp,
                "fn": self.fn, "tn": self.tn}


@dataclass(slots=True)
class Scores:
    per_mode: dict[str, Confusion]
    macro_modes: tuple[str, ...]  # the modes the evaluated detector claims to cover

    @property
    def micro(self) -> Confusion:
        total = Confusion()
        for mode in self.macro_modes:
            c = self.per_mode[mode]
            total.tp, total.fp, total.fn, total.tn = total.tp + c.tp, total.fp + c.fp, total.fn + c.fn, total.tn + c.tn
        return total

    @property
    def macro(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for name in ("precision", "recall", "f1", "kappa"):
            values = [v for m in self.macro_modes if (v := getattr(self.per_mode[m], name)) is not None]
            out[name] = sum(values) / len(values) if values else None
        return out

    def as_dict(self) -> dict:
        return {"modes": {m: c.as_dict() for m, c in self.per_mode.items()},
                "micro": self.micro.as_dict(), "macro": self.macro, "macro_modes": list(self.macro_modes)}


def score(pairs: Iterable[tuple[Mapping[str, bool], Iterable[str]]], modes: Sequence[str],
          macro_modes: Sequence[str] | None = None) -> Scores:
    """Score (labels, predicted modes) pairs; a mode missing from a run's labels counts as absent."""
    per_mode = {m: Confusion() for m in modes}
    for labels, predicted in pairs:
        hit = set(predicted)
        for mode, confusion in per_mode.items():
            confusion.add(bool(labels.get(mode, False)), mode in hit)
    return Scores(per_mode, tuple(m for m in (macro_modes if macro_modes is not None else modes) if m in per_mode))
