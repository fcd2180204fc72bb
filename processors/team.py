"""A run as a team: which agents took part, and the handoffs between them.

Frameworks record teams in their own shapes: a transfer tool the model calls
(``transfer_to_operator``, ``transfer_to_agent(agent_name=...)``), a span the framework writes
for the transfer (``handoff to operator``), an agent called as a tool (the tool span holds the
sub-agent's span), a sub-agent span right below its manager's. All of them are one thing
here, a :class:`Handoff`: an edge from one agent to another, with the span that carried it.
Detectors read the edges so that a handoff is never a mismatch or a repeated call by itself,
attribution and the web view read who did what. :func:`build_team` is pure (a run in, a
:class:`Team` out); :func:`adopt_steps` and :func:`stand_in_agents` change a run in place, as
part of hint derivation, so each step belongs to the agent that took it before anything reads it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from operator import attrgetter
from typing import Iterable

from mast_otel.processors.frameworks import on_reload, registry
from mast_otel.processors.tools.kinds import infer, words
from mast_otel.processors.model import AGENT, TOOL, Run, RunHints, Span

# Words after which a handoff tool's or span's name names its target ("transfer_to_operator",
# "handoff to operator"); generic targets ("transfer_to_agent", "delegate_work_to_coworker")
# name none, and the target is read from the arguments or the agent that starts next.
_GENERIC_TARGETS = frozenset({"agent", "coworker", "worker", "assistant", "team", "member", "expert", "next",
                              "another", "other", "subagent", "sub", "peer"})
# Argument keys that name the target; frameworks add their own (their tables' ``handoff_target_keys``).
_TARGET_KEYS = ("agent", "to", "target", "name", "next_agent", "handoff_to")
# Keys that name an agent and nothing else: a tool whose arguments hold one and that runs model calls
# inside it runs that agent (a framework's "ask a coworker" tool), whatever its name says; frameworks
# add their own (``agent_keys``).
_AGENT_KEYS = ("agent",)


@on_reload
@cache
def _arg_value() -> re.Pattern[str]:
    return _key_pattern((*registry().handoff_target_keys, *_TARGET_KEYS))


@on_reload
@cache
def _agent_arg() -> re.Pattern[str]:
    return _key_pattern((*registry().agent_keys, *_AGENT_KEYS))


def _key_pattern(keys: tuple[str, ...]) -> re.Pattern[str]:
    """A JSON string value under any of ``keys``."""
    return re.compile(r'"(?:%s)"\s*:\s*"([^"]{1,200})"' % "|".join(map(re.escape, dict.fromkeys(keys))))


@dataclass(frozen=True, slots=True)
class Handoff:
    """Agent ``source`` passed work to agent ``target`` through span ``span_id``."""

    span_id: str
    source_span_id: str | None  # the handing agent's span
    source: str | None  # the handing agent's name
    target: str | None  # the receiving agent's name, when the spans say
    kind: str  # "transfer": a tool call or handoff span; "delegation": a sub-agent run inside the caller
    start_ns: int


@dataclass(frozen=True, slots=True)
class Team:
    """The agents of a run in the order they first acted, and the handoffs between them."""

    agents: tuple[str, ...]
    handoffs: tuple[Handoff, ...]

    @property
    def is_team(self) -> bool:
        return len(self.agents) > 1 or bool(self.handoffs)

    def handoff_span_ids(self) -> frozenset[str]:
        return frozenset(h.span_id for h in self.handoffs)


def same_agent(a: str | None, b: str | None) -> bool:
    """Agent names compared as people write them: case, ``_``, ``-`` and spaces folded."""
    return a is not None and b is not None and fold(a) == fold(b)


@lru_cache(maxsize=4096)  # a team has a few names, compared again and again
def fold(name: str) -> str:
    return "".join(words(name))


@lru_cache(maxsize=4096)  # a run's few tool names, read for every call of them
def target_in_name(name: str | None) -> str | None:
    """The agent a handoff's name hands to (``transfer_to_operator`` -> ``operator``), unless generic."""
    parts = words(name or "")
    if "to" not in parts:
        return None
    tail = parts[len(parts) - 1 - parts[::-1].index("to") + 1:]
    if not tail or tail[-1] in _GENERIC_TARGETS:
        return None
    return "_".join(tail)


def target_in_arguments(arguments: str | None) -> str | None:
    """The agent a generic handoff tool names in its arguments (``{"agent_name": "operator"}``)."""
    found = _arg_value().search(arguments or "")
    return found.group(1) if found else None


def is_handoff(span: Span) -> bool:
    """A tool call that hands the run to another agent: its kind says so, or, before kinds are derived
    (live detection), its name does."""
    if span.role is not TOOL:
        return False
    if span.tool_kind is not None:
        return span.tool_kind == "handoff"
    return handoff_name(span.tool_name or span.name)


def handoff_name(name: str) -> bool:
    """Whether a tool's name says it hands the run to another agent (``transfer_to_x``, ``handoff to x``)."""
    kind = infer(name)
    return kind is not None and kind[0] == "handoff"


def same_action(executed: str, requested: Iterable[str]) -> bool:
    """Whether a tool run is one the model asked for, under another spelling (case, spaces, ``_`` and
    ``-`` folded) or as the same handoff (``transfer_to_operator`` runs as ``handoff to operator``)."""
    requested = tuple(requested)
    folded = fold(executed)
    if any(fold(r) == folded for r in requested):
        return True
    if not handoff_name(executed):
        return False
    target = target_in_name(executed)
    return any(handoff_name(r) and (target is None or (other := target_in_name(r)) is None or same_agent(target, other))
               for r in requested)


def build_team(run: Run) -> Team:
    """The run's agents and handoffs (see the module docstring)."""
    by_id = run.spans_by_id
    agent_spans = [s for s in run.agent_spans if not s.workflow]
    agents: dict[str, None] = {}
    owners: set[str] = set()  # agent spans that took a step themselves (the others only wrap agents)
    for step in run.steps:
        owner = run.agent_of(step)
        if owner is not None:
            owners.add(owner.span_id)
            if owner.agent_name:
                agents.setdefault(owner.agent_name, None)
    handoffs: list[Handoff] = []
    carried: set[str] = set()  # sub-agent spans whose handoff is already the tool call that holds them
    beside: _Beside | None = None  # made for the first handoff with no agent inside it
    # the agents inside each tool call, found in one walk per agent span (the plain path: per tool call)
    inside = _agents_by_tool(agent_spans, by_id) if run.shortcuts else None
    for span in run.tool_calls:
        inner = inside.get(id(span), []) if inside is not None else _agents_inside(span, agent_spans, by_id)
        if not is_handoff(span) and not inner:
            continue
        source_agent = run.agent_of(span)
        if not inner and source_agent is not None:
            if run.shortcuts:  # the plain path asks every agent span and step again for each handoff
                beside = beside or _Beside(run, agent_spans)
                inner = beside.run_beside(span, source_agent)
            else:
                inner = _run_beside(run, span, source_agent, agent_spans)
        source = _name_of(source_agent)
        target = (_name_of(inner[0]) if inner else None) or target_in_arguments(span.tool_args) \
            or target_in_name(span.tool_name or span.name) or _next_agent(span, agent_spans, source)
        carried.update(s.span_id for s in inner)
        handoffs.append(Handoff(span.span_id, source_agent.span_id if source_agent else None, source, target,
                                "delegation" if inner else "transfer", span.start_ns))
    for agent in agent_spans:
        if agent.span_id in carried or not agent.parent_span_id:
            continue
        parent = by_id.get(agent.parent_span_id)
        caller = run.agent_of(parent) if parent is not None else None
        if caller is not None and caller is not agent and caller.span_id in owners \
                and not same_agent(caller.agent_name, agent.agent_name):
            handoffs.append(Handoff(agent.span_id, caller.span_id, _name_of(caller), _name_of(agent), "delegation",
                                    agent.start_ns))
    handoffs.sort(key=lambda h: h.start_ns)
    known = {fold(name) for name in agents}
    for h in handoffs:
        for name in (h.source, h.target):
            if name and fold(name) not in known:
                known.add(fold(name))
                agents.setdefault(name, None)
    return Team(tuple(agents), tuple(handoffs))


def team_of(run: Run) -> Team:
    """``build_team(run)``, made once for the run's spans as they are (hint derivation and the
    detectors both read it)."""
    return run.memo("team", lambda: build_team(run))


_PARENT = attrgetter("parent_span_id")


def _name_of(span: Span | None) -> str | None:
    return (span.agent_name or span.name) if span is not None else None


def _agents_inside(tool: Span, agents: Iterable[Span], by_id: dict[str, Span]) -> list[Span]:
    """Agent spans whose nearest tool ancestor is ``tool``: an agent called as a tool."""
    found = []
    for agent in agents:
        cur = by_id.get(agent.parent_span_id or "")
        hops = 0
        while cur is not None and hops < 64:
            if cur is tool:
                found.append(agent)
                break
            if cur.role is TOOL or cur.role is AGENT:
                break
            cur = by_id.get(cur.parent_span_id or "")
            hops += 1
    return found


def _agents_by_tool(agents: Iterable[Span], by_id: dict[str, Span]) -> dict[int, list[Span]]:
    """``_agents_inside`` of every tool call at once, by the tool span's id (``id()``), agents in their order."""
    found: dict[int, list[Span]] = {}
    for agent in agents:
        cur = by_id.get(agent.parent_span_id or "")
        hops = 0
        while cur is not None and hops < 64:
            if cur.role is TOOL:
                found.setdefault(id(cur), []).append(agent)
                break
            if cur.role is AGENT:
                break
            cur = by_id.get(cur.parent_span_id or "")
            hops += 1
    return found


class _Beside:
    """``_run_beside`` for every handoff of one run, each agent span's and step's agent looked up once
    (grouped by the agent they belong to, in the run's order) rather than once per handoff."""

    def __init__(self, run: Run, agents: list[Span]) -> None:
        by_id = run.spans_by_id
        self.below: dict[int, list[Span]] = {}  # id of an agent span -> the agent spans right below a span of it
        for agent in agents:
            parent = by_id.get(agent.parent_span_id or "")
            if parent is not None and (owner := run.agent_of(parent)) is not None:
                self.below.setdefault(id(owner), []).append(agent)
        self.steps: dict[int, list[Span]] = {}  # id of an agent span -> its steps
        for step in run.steps:
            if (owner := run.agent_of(step)) is not None:
                self.steps.setdefault(id(owner), []).append(step)

    def run_beside(self, tool: Span, caller: Span) -> list[Span]:
        """What ``_run_beside(run, tool, caller, agents)`` gives."""
        later = [a for a in self.below.get(id(caller), ()) if a.start_ns >= tool.start_ns and a is not caller]
        if not later:
            return []
        first = min(later, key=lambda a: a.start_ns)
        between = any(s is not tool and tool.start_ns < s.start_ns < first.start_ns for s in self.steps.get(id(caller), ()))
        return [] if between else [first]


def _run_beside(run: Run, tool: Span, caller: Span, agents: list[Span]) -> list[Span]:
    """The agent span a delegation tool ran as its sibling, not inside it (a team leader's members): the first
    agent span right below the caller that starts once the tool has started, before the caller's
    next step of its own."""
    later = [a for a in agents if a.start_ns >= tool.start_ns and a is not caller
             and (parent := run.spans_by_id.get(a.parent_span_id or "")) is not None and run.agent_of(parent) is caller]
    if not later:
        return []
    first = min(later, key=lambda a: a.start_ns)
    between = any(s is not tool and tool.start_ns < s.start_ns < first.start_ns and run.agent_of(s) is caller
                  for s in run.steps)
    return [] if between else [first]


def _next_agent(span: Span, agents: list[Span], source: str | None) -> str | None:
    """A transfer that does not name its target hands to the next other agent that starts after it."""
    later = [a for a in agents if a.start_ns >= span.start_ns and not same_agent(a.agent_name, source)]
    return _name_of(min(later, key=lambda a: a.start_ns)) if later else None


def decision_of(run: Run, handoff: Handoff) -> Span | None:
    """The handing agent's model call that led to ``handoff``: its last one that started before it."""
    before = [c for c in run.llm_calls if c.start_ns <= handoff.start_ns
              and (a := run.agent_of(c)) is not None and a.span_id == handoff.source_span_id]
    return before[-1] if before else None


def adopt_steps(run: Run) -> bool:
    """Give each step of a team to the agent that took it, where the spans' nesting does not say
    (in place). Some instrumentations record an agent's span beside its steps rather than around
    them (graph agents through OpenLLMetry), or its tool calls outside it (a graph agent's tools
    node); then a step belongs to the innermost agent span below its own agent whose time encloses
    it, or, when the step names its agent, to the latest span of that agent that started before it.
    Returns whether anything changed."""
    agents = [a for a in run.agent_spans if not a.workflow]
    if len(agents) < 2:
        return False
    changed = False
    wrapping = {a.parent_span_id for a in agents}  # agent spans with an agent span right below them
    holders = set(map(_PARENT, run.spans))  # spans with a span right below them (a step holding a model call)
    for step in run.steps:
        owner = run.agent_of(step)
        named = step.agent_name
        if owner is not None and owner.span_id not in wrapping and (not named or owner.agent_name == named):
            continue  # the usual step: its own agent holds no other agent and it names none other
        if named and (owner is None or not same_agent(owner.agent_name, named)):
            same = [a for a in agents if a.start_ns <= step.start_ns and same_agent(a.agent_name, named)]
            adopter = same[-1] if same else None
        else:
            inside = [a for a in agents if a is not owner and a.start_ns <= step.start_ns and step.end_ns <= a.end_ns
                      and (owner is None or _below(run, a, owner))]
            adopter = max(inside, key=lambda a: a.start_ns) if inside else None
        if adopter is not None and adopter is not owner:
            step.parent_span_id = adopter.span_id
            if step.span_id in holders:
                run.forget_agents()  # a model call inside this step now belongs where it does
            changed = True
    if changed:
        run.forget_views()
    return changed


def _below(run: Run, span: Span, ancestor: Span) -> bool:
    by_id = run.spans_by_id
    cur = by_id.get(span.parent_span_id or "")
    hops = 0
    while cur is not None and hops < 256:
        if cur is ancestor:
            return True
        cur = by_id.get(cur.parent_span_id or "")
        hops += 1
    return False


STAND_IN = "a delegation tool ran this agent's steps inside it; the agent is named from its arguments"


def stand_in_agents(run: Run) -> bool:
    """Give a delegated worker that has no agent span of its own one to stand for it (in place).

    Some frameworks' delegation tools run the worker's model and tool calls inside the
    delegation tool's span, with no agent span for the worker: its steps would count as the
    delegating agent's own, and its fresh conversation as that agent's lost history. A handoff
    tool span holding model calls gets an agent span of its own, named after the agent its
    arguments name, and its direct children move under it; so does any tool holding model calls whose
    arguments name an agent (a framework's ``agent_keys``: an "ask a coworker" tool). Returns whether anything changed."""
    holders = {s.parent_span_id for s in run.llm_calls}
    added = []
    for tool in run.tool_calls:
        if tool.span_id not in holders:
            continue
        named = _agent_arg().search(tool.tool_args or "")
        if not is_handoff(tool) and named is None:
            continue
        name = (named.group(1) if named else None) or target_in_arguments(tool.tool_args) or target_in_name(tool.tool_name or tool.name) or "delegated agent"
        agent = Span(tool.trace_id, hashlib.blake2b(tool.span_id.encode(), digest_size=8).hexdigest(), tool.span_id,
                     f"invoke_agent {name}", tool.start_ns, tool.end_ns, role=AGENT, service_name=tool.service_name,
                     convention=tool.convention, agent_name=name, hints=RunHints(), derived={"agent": STAND_IN})
        for child in run.spans:
            if child.parent_span_id == tool.span_id:
                child.parent_span_id = agent.span_id
        added.append(agent)
    if not added:
        return False
    run.spans = sorted(run.spans + added, key=lambda s: s.start_ns)
    run.forget_views()
    return True
