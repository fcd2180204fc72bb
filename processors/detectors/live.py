"""Live detection: failure modes raised while a trace is still streaming in.

Spans arrive in the order they end, so a run's agent span (and with it the run's budget and
role hints) comes last. What can be judged from steps alone is judged as each step arrives,
with the same incremental trackers the whole-run diagnosis uses: repetition (FM-1.3), context
loss and resets (FM-1.4, FM-2.1), announced-versus-run tools (FM-2.6), an agent's own step
budget as soon as its steps carry it past it (FM-1.5, see ``budget``), and a run-wide step
limit when one is configured. An agent whose steps do not carry its budget is checked the
moment its agent span ends. Each mode is raised at most once per trace; the pipeline later
confirms or withdraws it against ``diagnose``.

Cost per span is constant except when an agent span arrives, which walks that agent's steps
once.
"""

from __future__ import annotations

from mast_otel.processors.config import DetectionConfig
from mast_otel.processors.detectors.budget import BudgetTracker
from mast_otel.processors.detectors.context import IterationCounter, finding, iterations
from mast_otel.processors.detectors.history import HistoryTracker
from mast_otel.processors.detectors.mismatch import MismatchTracker
from mast_otel.processors.detectors.repetition import RepetitionTracker
from mast_otel.processors.detectors.termination import CUT_OFF, DETECTOR as TERMINATION, UNAWARE
from mast_otel.processors.detectors.thresholds import threshold
from mast_otel.processors.model import Finding, Role, Span


class LiveDetection:
    """One per in-flight trace."""

    def __init__(self, config: DetectionConfig | None = None) -> None:
        self.config = config or DetectionConfig()
        self._disabled = frozenset(self.config.disabled_modes)
        self._repetition = RepetitionTracker.from_config(self.config, live=True)
        self._history = HistoryTracker.from_config(self.config, live=True)
        self._mismatch = MismatchTracker(live=True)
        self._budget = BudgetTracker()
        self._run_budget = int(threshold(self.config.thresholds, "termination.default_max_steps"))
        self._iterations = IterationCounter()  # run-wide; step indices kept apart per parent span
        self._steps = 0  # model and tool calls seen: a bound on any agent's own iterations
        self._children: dict[str, list[Span]] = {}
        self._raised: set[str] = set()

    @property
    def raised(self) -> frozenset[str]:
        """Modes raised so far."""
        return frozenset(self._raised)

    def observe(self, span: Span) -> list[Finding]:
        """Findings newly raised by ``span`` (each mode once per trace)."""
        if not self.config.live:
            return []
        key = span.parent_span_id
        if key:
            siblings = self._children.get(key)
            if siblings is None:
                self._children[key] = [span]
            else:
                siblings.append(span)
        role = span.role
        if role is Role.LLM or role is Role.TOOL:
            self._steps += 1
            self._iterations.add(span, key)
            # Called one by one, not gathered in a list: most spans raise nothing (per-span cost).
            repeated = self._repetition.observe(span)
            history = self._history.observe(span, key)
            mismatch = self._mismatch.observe(span, key)
            budget = self._budget.observe(span)
            limit = self._run_limit(span)
            if repeated is None and history is None and mismatch is None and budget is None and limit is None:
                return []
            return self._new((repeated, history, mismatch, budget, limit))
        if role is Role.AGENT:
            return self._new((self._agent_budget(span),))
        return []

    def _new(self, candidates: tuple[Finding | None, ...]) -> list[Finding]:
        """The candidates whose mode is neither raised before nor disabled, now marked raised."""
        new = []
        for f in candidates:
            if f is not None and f.mode not in self._raised and f.mode not in self._disabled:
                self._raised.add(f.mode)
                new.append(f)
        return new

    def _run_limit(self, span: Span) -> Finding | None:
        if not self._run_budget or len(self._iterations) <= self._run_budget:
            return None
        return finding(UNAWARE, 0.8, f"the run is past the configured limit of {self._run_budget} steps and still going",
                       [span.span_id], TERMINATION, live=True)

    def _agent_budget(self, agent: Span) -> Finding | None:
        hints = agent.hints
        if hints is None:
            return None
        name = agent.agent_name or agent.name
        if hints.termination_reason in CUT_OFF:
            return finding(UNAWARE, 0.9, f"agent {name!r} was stopped by {hints.termination_reason.replace('_', ' ')}",
                           [agent.span_id], TERMINATION, live=True)
        if hints.max_steps is None or self._steps <= hints.max_steps:
            return None  # no agent can have taken more iterations than the run has steps
        taken = iterations(self._own_steps(agent.span_id))
        if len(taken) <= hints.max_steps:
            return None
        return finding(UNAWARE, 0.9, f"agent {name!r} took {len(taken)} steps against a budget of {hints.max_steps}",
                       [agent.span_id] + [group[0].span_id for group in taken[hints.max_steps:hints.max_steps + 5]],
                       TERMINATION, anchor=agent.span_id, live=True)

    def _own_steps(self, agent_id: str) -> list[Span]:
        """Steps under ``agent_id`` that no nested agent span claims, in start order."""
        steps, stack = [], [agent_id]
        while stack:
            for child in self._children.get(stack.pop(), ()):
                if child.role is Role.AGENT:
                    continue
                if child.role is Role.LLM or child.role is Role.TOOL:
                    steps.append(child)
                stack.append(child.span_id)
        return sorted(steps, key=lambda s: s.start_ns)
