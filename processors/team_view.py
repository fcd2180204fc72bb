"""A run's team as a person reads it: its agents, who handed off to whom, who made each tool call.

Read from the run's step list (the stored one, or the one made from a run held in memory), the
same list the run page draws its lanes from, so ``analyze``, the API and the run page name the
same agents, handoffs and owners. Each step belongs to its nearest enclosing agent span (the
agent span's own name for an agent span); an agent counts once it made a model or tool call (one
that only wraps others, a crew or a workflow, owns none). A handoff is a tool call of kind
``handoff``: from the agent that made it, to the agent its name names when that agent took part,
else to the next other agent that acted. Pure: steps in, a :class:`TeamView` out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from mast_otel.processors.model import Role
from mast_otel.processors.service.store.run_steps import RunStep
from mast_otel.processors.team import same_agent, target_in_name


@dataclass(frozen=True, slots=True)
class HandoffEdge:
    """Agent ``source`` passed work to ``target`` (``None``: not known) through span ``span_id``."""

    span_id: str
    source: str | None
    target: str | None
    tool: str

    def as_dict(self) -> dict[str, str | None]:
        return {"from": self.source, "to": self.target, "span_id": self.span_id, "tool": self.tool}


@dataclass(frozen=True, slots=True)
class ToolOwner:
    """The agent that made tool call ``span_id``."""

    span_id: str
    tool: str
    agent: str | None
    kind: str | None

    def as_dict(self) -> dict[str, str | None]:
        return {"span_id": self.span_id, "tool": self.tool, "agent": self.agent, "kind": self.kind}


@dataclass(frozen=True, slots=True)
class TeamView:
    """Agents in the order they first acted, handoffs and tool calls in start order."""

    agents: tuple[str, ...]
    handoffs: tuple[HandoffEdge, ...]
    tool_calls: tuple[ToolOwner, ...]

    @property
    def is_team(self) -> bool:
        return len(self.agents) > 1 or bool(self.handoffs)

    def as_dict(self) -> dict[str, object]:
        return {"agents": list(self.agents), "handoffs": [h.as_dict() for h in self.handoffs],
                "tool_calls": [t.as_dict() for t in self.tool_calls]}


def step_agents(steps: Sequence[RunStep]) -> dict[str, str | None]:
    """Each step's agent: the nearest enclosing agent span's name (its own, for an agent span)."""
    by_id = {s.span_id: s for s in steps}
    found: dict[str, str | None] = {}
    for step in steps:
        cur: RunStep | None = step
        seen: set[str] = set()
        while cur is not None and cur.span_id not in seen and cur.role != Role.AGENT.value:
            seen.add(cur.span_id)
            cur = by_id.get(cur.parent_span_id or "")
        found[step.span_id] = (cur.agent or cur.name) if cur is not None else step.agent
    return found


def acting_agents(steps: Sequence[RunStep], agents: dict[str, str | None]) -> list[str]:
    """The agents that made a model or tool call, in the order they first did."""
    return list(dict.fromkeys(a for s in steps if s.role != Role.AGENT.value and (a := agents.get(s.span_id))))


def handoff_edges(steps: Sequence[RunStep], agents: dict[str, str | None], acting: Sequence[str]) -> list[HandoffEdge]:
    """The handoff tool calls of ``steps`` (in start order) as edges between ``acting`` agents."""
    edges = []
    for step in steps:
        if step.role != Role.TOOL.value or step.tool_kind != "handoff":
            continue
        source = agents.get(step.span_id)
        named = target_in_name(step.tool_name or step.name)  # the step list keeps no arguments
        nxt = next((agents[s.span_id] for s in steps if s.start_ns > step.start_ns
                    and agents.get(s.span_id) not in (None, source) and s.role != Role.AGENT.value), None)
        target = next((a for a in acting if same_agent(a, named)), None) if named else None
        edges.append(HandoffEdge(step.span_id, source, target or nxt, step.tool_name or step.name))
    return edges


def team_view(steps: Sequence[RunStep]) -> TeamView:
    """The team of the run whose step list ``steps`` is (start order)."""
    agents = step_agents(steps)
    acting = acting_agents(steps, agents)
    tools = tuple(ToolOwner(s.span_id, s.tool_name or s.name, agents.get(s.span_id), s.tool_kind)
                  for s in steps if s.role == Role.TOOL.value)
    return TeamView(tuple(acting), tuple(handoff_edges(steps, agents, acting)), tools)


def team_lines(team: Mapping[str, Any]) -> list[str]:
    """A team run's handoffs and who made which tool calls, one line each, from
    :meth:`TeamView.as_dict` (``analyze``'s table and report); nothing for a run of one agent."""
    if len(team["agents"]) < 2 and not team["handoffs"]:
        return []
    lines = [f"handoff {h['from'] or '?'} -> {h['to'] or '?'} ({h['tool']}, span {h['span_id']})" for h in team["handoffs"]]
    owned: dict[str, Counter[str]] = {}
    for call in team["tool_calls"]:
        owned.setdefault(call["agent"] or "?", Counter())[call["tool"]] += 1
    lines += [f"{agent} called " + ", ".join(f"{tool} x{n}" if n > 1 else tool for tool, n in tools.items())
              for agent, tools in owned.items()]
    return lines
