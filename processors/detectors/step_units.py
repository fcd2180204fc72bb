"""How much of its step budget an agent used, counted in the unit its framework counts (FM-1.5).

A budget is only comparable with steps counted the way the framework that enforces it counts
them. A framework declares its unit in its table (``frameworks.table.StepBudget``), and the agent
span that states the budget names the framework (``RunHints.budget_framework``):

- ``own_span``: the framework wraps each unit's model and tool calls in a span of its own (an
  action step); one unit per such span. Calls right below the agent span (a planning call, the
  answer the framework asks for once the budget is spent) are no unit, and neither is a tool's
  own model call.
- ``model_call``: each of the agent's model calls is one unit (a tool's own model call is not);
- ``tool_call``: each of the agent's tool calls is one unit;
- no framework (mast-otel's own ``mast.task.max_steps``): iterations (``context.iterations``),
  ``mast.step.index`` where the steps carry it.

A framework that stops an agent once its units reach the budget (``stops_at_budget``) never shows
a unit past it: there an agent whose units reached the budget used it up. Elsewhere only units
past the budget are an overrun. The whole-run detector (``termination``) and the live tracker
(``budget``) both ask :func:`spent`, so they count alike. Pure functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Sequence

from mast_otel.processors.detectors.context import iterations
from mast_otel.processors.frameworks import on_reload, registry
from mast_otel.processors.frameworks.table import StepBudget
from mast_otel.processors.model import LLM, TOOL, RunHints, Span

EVIDENCE_CAP = 5  # units named as evidence of an overrun; the explanation gives the full count
OWN_UNIT = "steps"  # mast-otel's own budget counts iterations, which its findings call steps


@dataclass(frozen=True, slots=True)
class BudgetUse:
    """An agent's step budget used up: how many units it used, in its framework's unit."""

    used: int  # units the agent used
    budget: int
    framework: str | None  # the family whose unit this is (None: mast-otel's iterations)
    crossing: list[Span]  # the first step of the unit that used it up, then of the units after (capped)

    @property
    def step_budget(self) -> StepBudget | None:
        return registry().stated_budget(self.framework) if self.framework else None

    def describe(self) -> str:
        """How a finding says it: "used 20 of 20 action steps, as <framework> counts them (its max_steps)"."""
        declared = self.step_budget
        if declared is None or self.framework is None:
            return f"took {self.used} {OWN_UNIT} against a budget of {self.budget}"
        return (f"used {self.used} of {self.budget} {declared.unit}, as {registry().shown_name(self.framework)} "
                f"counts them (its {declared.setting})")


def units(steps: Sequence[Span], declared: StepBudget | None) -> list[list[Span]]:
    """``steps`` (one agent's, in order) grouped into the units ``declared`` counts, in first-step
    order; ``None``: mast-otel's iterations."""
    if declared is None:
        return iterations(list(steps))
    if declared.count == "own_span":
        groups: dict[str, list[Span]] = {}
        for step in steps:
            if step.unit_span_id is not None:
                groups.setdefault(step.unit_span_id, []).append(step)
        return list(groups.values())
    if declared.count == "tool_call":
        return [[s] for s in steps if s.role is TOOL]
    tools = {s.span_id for s in steps if s.role is TOOL}
    return [[s] for s in steps if s.role is LLM and s.parent_span_id not in tools]


def declared_budget(hints: RunHints) -> StepBudget | None:
    """The budget declaration of the framework that stated ``hints``' budget (``None``: mast-otel's own)."""
    return registry().stated_budget(hints.budget_framework) if hints.budget_framework else None


def used(hints: RunHints, steps: Sequence[Span]) -> tuple[int, str]:
    """How many units ``steps`` (one agent invocation's) used of the budget ``hints`` state, and the unit's name."""
    declared = declared_budget(hints)
    return len(units(steps, declared)), declared.unit if declared is not None else OWN_UNIT


def spent(hints: RunHints, steps: Sequence[Span], budget: int | None = None) -> BudgetUse | None:
    """What ``steps`` (one agent invocation's) used of the budget ``hints`` state (or ``budget``, the
    one its steps carry), in its framework's unit, when that used it up; ``None`` otherwise."""
    budget = hints.max_steps if budget is None else budget
    if budget is None or budget <= 0:
        return None
    declared = declared_budget(hints)
    stops_at = declared is not None and declared.stops_at_budget
    first = budget - 1 if stops_at else budget  # the unit that used it up
    if len(steps) <= first:  # a unit holds at least one step (told without grouping)
        return None
    groups = units(steps, declared)
    if len(groups) <= first:
        return None
    return BudgetUse(len(groups), budget, hints.budget_framework if declared else None,
                     [group[0] for group in groups[first:first + EVIDENCE_CAP]])


def unspent_stop(hints: RunHints, used: BudgetUse | None) -> bool:
    """Whether ``hints`` say a step limit stopped the agent while its spans show the budget its
    framework states (and counts in spans of its own) not used up: that framework stops an agent
    only there, so what was read as its limit (a forced-answer prompt, a limit answer) came from
    elsewhere, e.g. a sub-agent's answer passed on."""
    if hints.termination_reason != "max_steps" or used is not None or not hints.budget_framework:
        return False
    declared = registry().stated_budget(hints.budget_framework)
    return declared is not None and declared.stops_at_budget and declared.count == "own_span"


@on_reload
@cache
def _stated() -> tuple[tuple[str, StepBudget, re.Pattern[str]], ...]:
    return tuple((name, b, re.compile(b.stated, re.IGNORECASE)) for name, b in registry().step_budgets if b.stated)


def stated_in(texts: Sequence[str | None]) -> tuple[str, StepBudget, int] | None:
    """(family, which budget, its value) when a limit error in ``texts`` names its framework's budget
    ("Recursion limit of 15 reached"), else ``None``."""
    for text in texts:
        if not text:
            continue
        for family, declared, pattern in _stated():
            found = pattern.search(text[:1024])
            if found is not None:
                return family, declared, int(next(g for g in found.groups() if g))
    return None
