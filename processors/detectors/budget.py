"""Live FM-1.5: an agent's own step budget and a run-wide step limit, checked while steps stream in.

``TerminationTracker`` is the live side of the ``unaware_of_termination`` detector. It has
three sources: the budget the steps carry (``BudgetTracker``, below), the configured run-wide
limit (``termination.default_max_steps``), and, for steps that carry no budget, the agent's
own budget checked the moment its agent span ends (which walks that agent's steps once), with
the whole-run count (``step_units.spent``). A budget a framework states on its agent span is
left to the diagnosis: it is counted in the framework's unit, which can take the framework's
own step spans, and live sees none of those (they are not kept).

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

from mast_otel.processors.detectors.settings import DetectionConfig
from mast_otel.processors.detectors.context import IterationCounter, finding
from mast_otel.processors.detectors.step_units import spent
from mast_otel.processors.detectors.termination import (ASSUMED_CONFIDENCE, CUT_OFF, DETECTOR as TERMINATION, UNAWARE,
                                                        run_limit_overrun, stopped_by)
from mast_otel.processors.model import AGENT, LLM, TOOL, Finding, Span

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
        self.budgeted = False  # no step carried a budget yet: nothing to count (the usual third-party case)

    def observe(self, span: Span) -> Finding | None:
        """A finding when ``span`` takes its agent past the budget (callers keep it once per trace)."""
        if span.step_budget is None and not self.budgeted:
            return None
        self.budgeted = True
        if span.role is not LLM and span.role is not TOOL:
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
        parent.iterations.merge(child.iterations)
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


class TerminationTracker:
    """Live FM-1.5 for one trace: the step-carried budget, the run-wide limit, the agent-span budget."""

    def __init__(self, config: DetectionConfig) -> None:
        # Made for every trace, so the parts most traces never use are made when first needed: the
        # step-carried budget's tracker when a step carries one, the run-wide count when configured.
        self._budget: BudgetTracker | None = None
        self._run_budget = config.termination.default_max_steps
        # run-wide; step indices kept apart per parent span
        self._iterations = IterationCounter() if self._run_budget else None
        self._steps = 0  # model and tool calls seen: a bound on any agent's own iterations
        self._children: dict[str, list[Span]] = {}

    def observe(self, span: Span, key: str | None) -> Finding | None:
        if key:
            siblings = self._children.get(key)
            if siblings is None:
                self._children[key] = [span]
            else:
                siblings.append(span)
        role = span.role
        if role is LLM or role is TOOL:
            self._steps += 1
            if self._iterations is not None:
                self._iterations.add(span, key)
            if self._budget is None and span.step_budget is not None:
                self._budget = BudgetTracker()
            # (no budget tracker: no step carried a budget yet, so there is nothing to count)
            found = self._budget.observe(span) if self._budget is not None else None
            if found is not None or self._iterations is None:
                return found
            return self._run_limit(span)
        if role is AGENT:
            return self._agent_budget(span)
        return None

    def _run_limit(self, span: Span) -> Finding | None:
        if self._iterations is None or len(self._iterations) <= self._run_budget:
            return None
        return finding(UNAWARE, ASSUMED_CONFIDENCE, run_limit_overrun(len(self._iterations), self._run_budget) + " (still going)",
                       [span.span_id], TERMINATION, anchor=span.span_id, live=True)

    def _agent_budget(self, agent: Span) -> Finding | None:
        hints = agent.hints
        if hints is None:
            return None
        name = agent.agent_name or agent.name
        if hints.budget_framework is not None:
            # A budget a framework states is counted in its unit, which may need its own step spans:
            # live never sees those (they are not kept), so it is judged when the run is diagnosed.
            return None
        if hints.termination_reason in CUT_OFF:
            return finding(UNAWARE, 0.9, f"agent {name!r} was stopped by {stopped_by(hints.termination_reason)}",
                           [agent.span_id], TERMINATION, live=True)
        if hints.max_steps is None or self._steps < hints.max_steps:
            return None  # no agent can have used more units than the run has steps
        # mast-otel's own budget: the same count as the whole-run detector's, over the steps below this agent span
        used = spent(hints, self._own_steps(agent.span_id))
        if used is None:
            return None
        return finding(UNAWARE, 0.9, f"agent {name!r} {used.describe()}",
                       [agent.span_id] + [step.span_id for step in used.crossing],
                       TERMINATION, anchor=used.crossing[0].span_id, live=True)

    def _own_steps(self, agent_id: str) -> list[Span]:
        """Steps under ``agent_id`` that no nested agent span claims, in start order.

        Each span id is walked once: a span sent as its own parent (or ids that loop) ends the walk."""
        steps, stack, walked = [], [agent_id], {agent_id}
        while stack:
            for child in self._children.get(stack.pop(), ()):
                if child.role is AGENT:
                    continue
                if child.role is LLM or child.role is TOOL:
                    steps.append(child)
                if child.span_id not in walked:
                    walked.add(child.span_id)
                    stack.append(child.span_id)
        return sorted(steps, key=lambda s: s.start_ns)


def live_tracker(config: DetectionConfig) -> TerminationTracker:
    return TerminationTracker(config)
