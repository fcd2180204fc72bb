"""How often the attribution names the labelled mistake agent and step, beside two baselines.

Pure arithmetic over :class:`AttributionCase`. A run with no attribution counts as wrong on
both (accuracy is over all labelled runs, and ``coverage`` says how many got an answer). Agents
match by ``team.fold`` (frameworks and labels spell one agent differently); steps
match exactly, as whatever the label names them by: a position in a log, or a span id. The
baselines need no detector: "most active agent" names the agent with the most steps in the
run (ties: the first to speak), "first agent step" names the first step not written by a
human. Intervals are 95% Wilson score intervals.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from mast_otel.processors.team import same_agent
from mast_otel.processors.offline.scoring import wilson

Step = int | str  # a step's position in a log, or its span id


@dataclass(frozen=True, slots=True)
class AttributionCase:
    agent: str  # labelled mistake agent
    step: Step  # labelled mistake step, named as ``step_keys`` name steps
    speakers: tuple[str | None, ...]  # who wrote each step, None for a human
    predicted_agent: str | None
    predicted_step: Step | None
    step_keys: tuple[Step, ...] = ()  # each speaker's step as the label names it; empty: its position


def most_active_agent(speakers: Sequence[str | None]) -> str | None:
    counts = Counter(s for s in speakers if s is not None)
    if not counts:
        return None
    top = max(counts.values())
    return next(s for s in speakers if s is not None and counts[s] == top)


def first_agent_step(speakers: Sequence[str | None]) -> int | None:
    return next((i for i, s in enumerate(speakers) if s is not None), None)


def _first_step(case: AttributionCase) -> Step | None:
    """The "first agent step" baseline's answer, named as the label names steps."""
    first = first_agent_step(case.speakers)
    return first if first is None or not case.step_keys else case.step_keys[first]


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
        "attribution": {"agent": _accuracy(sum(same_agent(c.predicted_agent, c.agent) for c in cases), n),
                        "step": _accuracy(sum(c.predicted_step == c.step for c in cases), n)},
        "on_attributed_runs": {"agent": _accuracy(sum(same_agent(c.predicted_agent, c.agent) for c in answered), len(answered)),
                               "step": _accuracy(sum(c.predicted_step == c.step for c in answered), len(answered))},
        "baselines": {
            "most active agent": {"agent": _accuracy(sum(same_agent(most_active_agent(c.speakers), c.agent) for c in cases), n)},
            "first agent step": {"step": _accuracy(sum(_first_step(c) == c.step for c in cases), n)},
        },
        "intervals": "95% Wilson score intervals",
    }
