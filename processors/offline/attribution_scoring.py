"""How often the attribution names the labelled mistake agent and step, beside two baselines.

Pure arithmetic over :class:`AttributionCase`. A run with no attribution counts as wrong on
both (accuracy is over all labelled runs, and ``coverage`` says how many got an answer). The
baselines need no detector: "most active agent" names the agent with the most steps in the
run (ties: the first to speak), "first agent step" names the first step not written by a
human. Intervals are 95% Wilson score intervals.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from mast_otel.processors.offline.scoring import wilson


@dataclass(frozen=True, slots=True)
class AttributionCase:
    agent: str  # labelled mistake agent
    step: int  # labelled mistake step (index into the run's steps)
    speakers: tuple[str | None, ...]  # who wrote each step, None for a human
    predicted_agent: str | None
    predicted_step: int | None


def most_active_agent(speakers: Sequence[str | None]) -> str | None:
    counts = Counter(s for s in speakers if s is not None)
    if not counts:
        return None
    top = max(counts.values())
    return next(s for s in speakers if s is not None and counts[s] == top)


def first_agent_step(speakers: Sequence[str | None]) -> int | None:
    return next((i for i, s in enumerate(speakers) if s is not None), None)


def _accuracy(hits: int, n: int) -> dict:
    ci = wilson(hits, n)
    return {"accuracy": hits / n if n else None, "hits": hits, "runs": n,
            "ci": None if ci is None else [round(ci[0], 4), round(ci[1], 4)]}


def score_attribution(cases: Sequence[AttributionCase]) -> dict:
    n = len(cases)
    answered = [c for c in cases if c.predicted_agent is not None or c.predicted_step is not None]
    return {
        "runs": n,
        "coverage": _accuracy(sum(c.predicted_agent is not None or c.predicted_step is not None for c in cases), n),
        "attribution": {"agent": _accuracy(sum(c.predicted_agent == c.agent for c in cases), n),
                        "step": _accuracy(sum(c.predicted_step == c.step for c in cases), n)},
        "on_attributed_runs": {"agent": _accuracy(sum(c.predicted_agent == c.agent for c in answered), len(answered)),
                               "step": _accuracy(sum(c.predicted_step == c.step for c in answered), len(answered))},
        "baselines": {
            "most active agent": {"agent": _accuracy(sum(most_active_agent(c.speakers) == c.agent for c in cases), n)},
            "first agent step": {"step": _accuracy(sum(first_agent_step(c.speakers) == c.step for c in cases), n)},
        },
        "intervals": "95% Wilson score intervals",
    }
