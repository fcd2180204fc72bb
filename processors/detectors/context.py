"""What every detector needs to know about a run, computed once per diagnosis.

A multi-agent run is judged per agent: each step belongs to its nearest enclosing agent span
and is held to that agent's own hints (budget, role, allowed tools); task-level facts
(constraints, ambiguity) are inherited from enclosing agents.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from typing import Callable, Mapping, Protocol, Sequence, TypeVar

from mast_otel.processors.detectors.settings import DetectionConfig
from mast_otel.processors.model import AGENT, LLM, TOOL, Finding, Run, RunHints, Span
from mast_otel.processors.team import Team, team_of

NO_TEAM = Team((), ())

FAILED_CHECK = "failed"
T = TypeVar("T")
# Module constants: an enum member lookup costs more than the rest of a step's counting.


@dataclass(frozen=True, slots=True)
class AgentScope:
    """One agent span (or the whole run when it has none) and the hints that bind its steps."""

    span_id: str | None
    name: str
    hints: RunHints
    constraints: frozenset[str]  # own plus inherited
    ambiguous: bool  # own, else inherited


class LiveState(Protocol):
    """What live detection kept of a trace (``LiveDetection``), so that whole-run rules need not
    feed the same steps to the same trackers a second time."""

    def saw(self, steps: list[Span], config: DetectionConfig) -> bool:
        """Whether the live trackers, made from ``config``, were fed exactly ``steps``: the same
        spans in that order, each as it is now."""
        ...

    def keyed_alike(self, steps: list[Span]) -> bool:
        """Whether ``steps`` (those it ``saw``) were each fed under the parent span id it has now
        (live, a step is keyed by its parent)."""
        ...

    def findings_of(self, detector: str) -> list[Finding] | None:
        """Every finding the live tracker of ``detector`` returned, in order, a re-raised one in its
        last version (``latest``) (``None``: it had none, or it judged a step otherwise than a
        replay would, as a tracker may where spans arrive late)."""
        ...


class RunContext:
    """A run plus the per-span agent lookup and its detection config, built in one pass.

    ``shortcuts`` (on by default) lets the context and the detectors that read it take the
    shortcuts: the lone-agent run's lookups built whole (``_lone_agent``), the live trackers'
    findings reused in place of a replay (``replay``), a check skipped when nothing it reads is
    there. ``False`` takes the plain path, with the same findings (tests compare the two)."""

    def __init__(self, run: Run, config: DetectionConfig, live: LiveState | None = None, *, shortcuts: bool = True) -> None:
        self.run = run
        self.config = config
        self.shortcuts = shortcuts
        self._live = live
        self._live_saw_steps: bool | None = None  # asked once, on the first replay
        self._live_keyed_alike: bool | None = None  # asked once, on the first replay keyed by agent
        # whether every step's key is its parent span id, the key live detection fed it under
        self._keyed_by_parent = True
        self.steps = run.steps
        self._scopes: dict[str | None, AgentScope] = {}
        self._agent_of: dict[str, str | None] = {}
        self._tool_calls: dict[str | None, list[Span]] = {}
        self._keyed_steps: list[tuple[Span, str | None]] | None = None  # see ``keyed_steps``
        self._only_key: str | None = None  # the key of every step, when the run has one scope
        agent_of = _lone_agent(run) if shortcuts else None
        if agent_of is not None:
            self._one_scope(run, agent_of)
        else:
            self._walk(run)
        self._iterations: dict[str | None, list[list[Span]]] = {}
        self._shared: dict[str, object] = {}
        self._owning: list[AgentScope] | None = None  # ``scopes``, once asked

    def _one_scope(self, run: Run, agent_of: dict[str, str | None]) -> None:
        """The usual run (see ``_lone_agent``): every span belongs to the root agent, so every
        lookup is built whole, in C, instead of span by span; it gives what ``_walk`` gives."""
        root = run.root
        assert root is not None
        self._scope_for(root, {})  # no parent to inherit from: it is not among the spans
        self._agent_of = agent_of
        steps = self.steps
        self._steps_by_scope: dict[str | None, list[Span]] = {root.span_id: steps} if steps else {}  # shared with the run: read, never changed
        self._tool_calls[root.span_id] = run.tool_calls
        self._only_key = root.span_id  # ``keyed_steps`` pairs it with each step on first ask: a run
        # whose live detection is reused never asks

    def _walk(self, run: Run) -> None:
        """Any run: each span's agent scope, found from its parent's (or by a walk up the tree)."""
        by_id = run.spans_by_id
        agent_of = self._agent_of
        steps_by_scope: dict[str | None, list[Span]] = {}  # in first-step order, as ``scopes`` lists them
        # Each step with its agent scope's span id: what every replayed tracker is fed.
        keyed_steps: list[tuple[Span, str | None]] = []
        by_parent = True
        for span in run.spans:
            # Spans are in start order, so a span's parent has usually been resolved already: then
            # it belongs where its parent does, without a walk.
            parent, role = span.parent_span_id, span.role
            if role is not AGENT and parent and parent in agent_of and span.span_id not in agent_of:
                key = agent_of[span.span_id] = agent_of[parent]
            else:
                key = self._resolve(span, by_id)
            if role is LLM or role is TOOL:
                steps = steps_by_scope.get(key)
                if steps is None:
                    steps_by_scope[key] = [span]
                else:
                    steps.append(span)
                keyed_steps.append((span, key))
                if key != parent:
                    by_parent = False
        self._steps_by_scope = steps_by_scope
        self._keyed_steps = keyed_steps
        self._keyed_by_parent = by_parent

    @property
    def keyed_steps(self) -> list[tuple[Span, str | None]]:
        """Each step with its agent scope's span id, in order: what every replayed tracker is fed."""
        if self._keyed_steps is None:
            self._keyed_steps = list(zip(self.steps, repeat(self._only_key)))
        return self._keyed_steps

    def replay(self, detector: str, make_tracker: Callable[[], Callable[[Span, str | None], Finding | None]],
               *, reuse_live: bool = True, keyed: bool = True) -> list[Finding]:
        """What the incremental tracker ``make_tracker()`` returns when fed the run's steps in order,
        keyed by their agent span; ``detector`` names the findings it makes.

        A run diagnosed in the service was fed to the same tracker live, span by span. When those
        were exactly these steps with these keys (the usual single-agent run whose spans ended in
        the order they started, with nothing derived on them since), the live tracker's findings
        are the answer, and replaying would only repeat the work (``reuse_live=False``: a tracker
        that judges differently live, where spans arrive as they end; ``keyed=False``: a tracker
        that reads no key, whose work stands whatever keys the steps were fed under).
        """
        live = self._live
        if (reuse_live and self.shortcuts and live is not None and self.live_saw_steps(keyed=keyed)
                and (found := live.findings_of(detector)) is not None):
            return [dataclasses.replace(f, live=False) if f.live else f for f in found]
        observe = make_tracker()
        return latest([f for s, key in self.keyed_steps if (f := observe(s, key)) is not None])

    def live_saw_steps(self, *, keyed: bool = True) -> bool:
        """Whether the run's live detection was fed exactly the steps a replay feeds, and (``keyed``)
        with the same keys (live keys a step by its parent as it arrived: the same when every step
        sits right below its agent, and did then)."""
        if self._live_saw_steps is None:
            live = self._live
            self._live_saw_steps = live is not None and live.saw(self.steps, self.config)
        if not keyed or not self._live_saw_steps:
            return self._live_saw_steps
        if self._live_keyed_alike is None:
            live = self._live
            self._live_keyed_alike = self._keyed_by_parent and live is not None and live.keyed_alike(self.steps)
        return self._live_keyed_alike

    @property
    def team(self) -> Team:
        """The run's agents and handoffs (``team.build_team``), built once per diagnosis; a run of
        one agent span has none to build (the usual run: told without a walk)."""
        if len(self.run.agent_spans) < 2:
            return NO_TEAM
        return team_of(self.run)

    def shared(self, key: str, make: Callable[[], T]) -> T:
        """``make()`` once per diagnosis for every detector that asks under ``key`` (a replayed
        tracker several checks read, never change)."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]  # type: ignore[return-value]

    def _resolve(self, span: Span, by_id: Mapping[str, Span]) -> str | None:
        """Nearest agent span id of ``span`` (itself for agent spans), memoized."""
        chain: list[str] = []
        cur: Span | None = span
        found: str | None = None
        while cur is not None and cur.span_id not in chain:
            if cur.span_id in self._agent_of:
                found = self._agent_of[cur.span_id]
                break
            if cur.role is AGENT:
                found = cur.span_id
                self._scope_for(cur, by_id)
                break
            chain.append(cur.span_id)
            cur = by_id.get(cur.parent_span_id) if cur.parent_span_id else None
        for sid in chain:
            self._agent_of[sid] = found
        return found

    def _scope_for(self, agent: Span, by_id: Mapping[str, Span]) -> AgentScope:
        scope = self._scopes.get(agent.span_id)
        if scope is not None:
            return scope
        hints = agent.hints or RunHints()
        self._agent_of[agent.span_id] = agent.span_id
        parent_span = by_id.get(agent.parent_span_id or "")
        parent_id = self._resolve(parent_span, by_id) if parent_span is not None else None
        parent = self._scopes.get(parent_id) if parent_id else None
        constraints = frozenset(hints.constraints) | (parent.constraints if parent else frozenset())
        ambiguous = hints.ambiguous if hints.ambiguous is not None else bool(parent and parent.ambiguous)
        scope = AgentScope(agent.span_id, agent.agent_name or agent.name, hints, constraints, ambiguous)
        self._scopes[agent.span_id] = scope
        return scope

    def scope(self, span: Span) -> AgentScope:
        """The agent scope that ``span`` belongs to."""
        return self.scope_by_id(self._agent_of.get(span.span_id))

    def scope_by_id(self, agent_id: str | None) -> AgentScope:
        """The agent scope of agent span ``agent_id`` (``None``: the run's own)."""
        if agent_id is None and None not in self._scopes:  # made on first ask: most runs never ask
            hints = self.run.hints
            self._scopes[None] = AgentScope(None, self.run.agent or "agent", hints, frozenset(hints.constraints),
                                            bool(hints.ambiguous))
        return self._scopes[agent_id]

    @property
    def scopes(self) -> list[AgentScope]:
        """Every agent scope that owns at least one step, in first-step order (shared: read, never change)."""
        if self._owning is None:
            self._owning = [self.scope_by_id(agent_id) for agent_id in self._steps_by_scope]
        return self._owning

    def steps_of(self, scope: AgentScope) -> list[Span]:
        """The steps ``scope`` owns, in order (a new list: callers may keep or change it)."""
        return list(self._steps_by_scope.get(scope.span_id, ()))

    def tool_calls_of(self, scope: AgentScope) -> list[Span]:
        """The tool calls among the steps ``scope`` owns, in order (shared: read, never change)."""
        tools = self._tool_calls.get(scope.span_id)
        if tools is None:
            tools = self._tool_calls[scope.span_id] = [s for s in self._steps_by_scope.get(scope.span_id, ()) if s.role is TOOL]
        return tools

    def iterations_of(self, scope: AgentScope) -> list[list[Span]]:
        """``iterations`` of the steps ``scope`` owns, grouped once per diagnosis."""
        groups = self._iterations.get(scope.span_id)
        if groups is None:
            groups = self._iterations[scope.span_id] = iterations(self._steps_by_scope.get(scope.span_id, []))
        return groups

    def anchor(self, scope: AgentScope) -> str | None:
        """The span an agent-level finding goes on: the agent span, else the run's root."""
        return scope.span_id or (self.run.root.span_id if self.run.root else None)


_PARENT, _SPAN_ID = attrgetter("parent_span_id"), attrgetter("span_id")


def _lone_agent(run: Run) -> dict[str, str | None] | None:
    """When the run is one agent whose spans are all its direct children (how instrumented
    single-agent runs look), every span id mapped to the root's, else ``None``.

    Such a run has one scope and every span's key is the root's: ``RunContext`` then skips the
    per-span walk. Every test here runs in C (a count over the spans' parent ids, a dict of
    their ids); spans sharing an id, or a root whose parent is among the spans, take the walk.
    """
    root = run.root
    if root is None or root.role is not AGENT:
        return None
    agents = run.agent_spans
    spans, root_id = run.spans, root.span_id
    if len(agents) != 1 or agents[0] is not root or list(map(_PARENT, spans)).count(root_id) != len(spans) - 1:
        return None
    agent_of: dict[str, str | None] = dict.fromkeys(map(_SPAN_ID, spans), root_id)
    return agent_of if len(agent_of) == len(spans) and root.parent_span_id not in agent_of else None


class IterationCounter:
    """Counts iterations, the unit ``mast.task.max_steps`` budgets, as steps arrive one by one.

    The one place the rule is written; whole-run grouping (``iterations``), the live run-wide
    limit and the live per-agent budget (``budget``) all feed steps through it. A span that
    carries ``mast.step.index`` belongs to that index's iteration (indices are kept apart by
    the ``scope`` the caller passes). Without it, a model call opens a new iteration and the
    tool calls after it belong to it, while a tool call with no model call before it is an
    iteration of its own: a model call and the tool calls it led to are one step, not several.
    """

    __slots__ = ("keys", "current", "_after_model_call")

    def __init__(self) -> None:
        self.keys: set[object] = set()  # one per iteration seen
        self.current: object = None  # the iteration the last step belongs to
        self._after_model_call = False

    def __len__(self) -> int:
        return len(self.keys)

    def merge(self, other: IterationCounter) -> None:
        """Take in the iterations ``other`` counted (live: a step's children joining its agent's count)."""
        self.keys |= other.keys

    def add(self, span: Span, scope: object = None) -> bool:
        """Count ``span``; ``True`` when it opens an iteration not seen before."""
        index = span.step_index
        if index is not None:
            key: object = index if scope is None else (scope, index)  # an int never equals a span id
            self._after_model_call = span.role is LLM
        elif span.role is LLM:
            key = span.span_id
            self._after_model_call = True
        elif self._after_model_call:
            return False  # a tool call the preceding model call led to: same iteration
        else:
            key = span.span_id
        self.current = key
        keys = self.keys
        if key in keys:
            return False
        keys.add(key)
        return True


def iterations(steps: list[Span]) -> list[list[Span]]:
    """Group an agent's steps into iterations (see ``IterationCounter``), in first-step order."""
    counter = IterationCounter()
    groups: dict[object, list[Span]] = {}
    for span in steps:
        if counter.add(span):
            groups[counter.current] = [span]
        else:
            groups[counter.current].append(span)
    return list(groups.values())


def claims_success(hints: RunHints) -> bool:
    """Whether the run declared its task done: explicitly, or by ending with a final answer."""
    if hints.claimed_success is not None:
        return hints.claimed_success
    return hints.termination_reason == "final_answer"


def check_result(span: Span) -> str | None:
    """``"passed"``/``"failed"`` for a verification tool call, ``None`` for anything else."""
    if span.tool_kind != "verify" or span.role is not TOOL:  # the kind first: most steps are no check
        return None
    if span.verification_passed is None:
        return FAILED_CHECK if span.error else None
    return "passed" if span.verification_passed else FAILED_CHECK


def failed(span: Span) -> bool:
    """A tool call that errored or a check that did not pass."""
    return span.role is TOOL and (span.error or span.verification_passed is False)


def same_finding(f: Finding) -> tuple[str, str | None]:
    """What a tracker that raises a finding again, grown (a loop that keeps going), keeps the same:
    its mode and the span it goes on."""
    return f.mode, f.anchor_span_id


def latest(found: list[Finding]) -> list[Finding]:
    """``found`` with each re-raised finding's last version, where its first one was."""
    if len(found) < 2:
        return found
    return list({same_finding(f): f for f in found}.values())


def finding(mode: str, confidence: float, explanation: str, evidence: Sequence[str | None],
            detector: str, *, anchor: str | None = None, live: bool = False) -> Finding:
    """A rule finding; evidence keeps its order and drops missing ids."""
    ids = tuple(dict.fromkeys(filter(None, evidence)))
    return Finding(mode, round(confidence, 3), explanation, ids, span_id=anchor, source="rules",
                   detector=detector, live=live)


def describe(span: Span) -> str:
    """A span named by its tool or model only (never its content)."""
    if span.role is TOOL:
        return f"tool {span.tool_name or span.name!r}"
    if span.role is LLM:
        return f"model call {span.name!r}"
    return f"agent {span.agent_name or span.name!r}"


