"""A run's own step budget, checked while its steps stream in (live FM-1.5).

The budget (``mast.task.max_steps``) is written on the agent span, which ends, and so arrives,
last. mast-otel's instrumentation also writes it on every model and tool span of the run
(``Span.step_budget``), so iterations can be counted as steps arrive and an overrun raised
while the agent is still going.

Iterations are counted per enclosing agent. In end order a step's agent span is not known yet,
so steps are grouped under their parent span; when a step span that has children arrives (a
tool that called a model), its group joins its own parent's group, so once the parent chain is
known the count is per agent. Agent spans never join their parent's group: a sub-agent keeps
its own count. Cost per span is constant (amortised; groups merge smaller into larger), and
nothing is counted in traces whose steps carry no budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mast_otel.processors.detectors.context import IterationCounter, finding
from mast_otel.processors.detectors.termination import DETECTOR as TERMINATION, UNAWARE
from mast_otel.processors.model import Finding, Role, Span

EVIDENCE_CAP = 5  # steps past the budget named as evidence


@dataclass(slots=True)
class _Group:
    """The steps counted under one parent span (and whatever groups merged into it)."""

    iterations: IterationCounter = field(default_factory=IterationCounter)
    first_over: list[str] = field(default_factory=list)  # first span of each iteration past the budget
    budget: int | None = None
    agent: str | None = None


class BudgetTracker:
    """Raises FM-1.5 the moment an agent's iterations pass the budget its steps carry."""

    def __init__(self) -> None:
        self._groups: dict[str, _Group] = {}
        self._merged: dict[str, str] = {}  # span id -> the group id it was merged into
        self._budgeted = False  # no step carried a budget yet: nothing to count (the usual third-party case)

    def observe(self, span: Span) -> Finding | None:
        """A finding when ``span`` takes its agent past the budget (callers keep it once per trace)."""
        if span.step_budget is None and not self._budgeted:
            return None
        self._budgeted = True
        if span.role is not Role.LLM and span.role is not Role.TOOL:
            return None
        group_id = self._find(span.parent_span_id or span.span_id)
        group = self._groups.get(group_id)
        if group is None:
            group = self._groups[group_id] = _Group()
        self._count(group, span)
        if span.span_id in self._groups and span.span_id != group_id:  # this step had children
            group = self._merge(span.span_id, group_id)
        return self._check(group, span)

    def _find(self, group_id: str) -> str:
        root = group_id
        while root in self._merged:
            root = self._merged[root]
        while group_id != root:  # path compression
            following = self._merged[group_id]
            self._merged[group_id] = root
            group_id = following
        return root

    def _merge(self, child_id: str, parent_id: str) -> _Group:
        """Fold the group of a step's children into the step's own group."""
        child, parent = self._groups.pop(child_id), self._groups[parent_id]
        if len(child.iterations) > len(parent.iterations):
            child, parent = parent, child
            self._groups[parent_id] = parent
        parent.iterations.keys |= child.iterations.keys
        parent.first_over = (parent.first_over + child.first_over)[:EVIDENCE_CAP]
        parent.budget = parent.budget if parent.budget is not None else child.budget
        parent.agent = parent.agent or child.agent
        self._merged[child_id] = parent_id
        return parent

    @staticmethod
    def _count(group: _Group, span: Span) -> None:
        if span.step_budget is not None and span.step_budget >= 0 and group.budget is None:
            group.budget = span.step_budget
        if span.agent_name and group.agent is None:
            group.agent = span.agent_name
        if group.iterations.add(span):
            if group.budget is not None and len(group.iterations) > group.budget and len(group.first_over) < EVIDENCE_CAP:
                group.first_over.append(span.span_id)

    def _check(self, group: _Group, span: Span) -> Finding | None:
        if group.budget is None or len(group.iterations) <= group.budget:
            return None
        name = group.agent or "agent"
        return finding(UNAWARE, 0.9, f"agent {name!r} is past its budget of {group.budget} steps "
                       f"({len(group.iterations)} so far) and still going",
                       group.first_over or [span.span_id], TERMINATION, anchor=span.span_id, live=True)
