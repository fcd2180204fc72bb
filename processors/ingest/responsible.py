"""A scenario's responsible step, as its label locates it, resolved to a span of a recorded run.

A label cannot name a span id: ids are new in every recording. It names the step the way a
person reading the run would::

    {"agent": "coordinator", "tool": null, "occurrence": -1}

the agent whose decision is the decisive mistake, and which of its steps: ``tool`` null means
one of its model calls, else one of its calls of that tool; ``occurrence`` counts those steps
from 1 in start order, and from the end when negative (-1 is the last). A step's agent is its
nearest enclosing agent span, named as the attribution names it, and agent names compare as
the attribution scoring compares them (``team.fold``). Resolving happens once per
recording, when the corpus is read, so scoring compares span ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from mast_otel.processors.attribution import step_agent
from mast_otel.processors.team import fold as agent_key
from mast_otel.processors.model import Role, Run


class Unresolved(ValueError):
    """The run has no step where the label points: the label or the recording is wrong."""


@dataclass(frozen=True, slots=True)
class Responsible:
    agent: str
    tool: str | None  # None: one of the agent's model calls
    occurrence: int  # 1-based in start order; negative counts from the last (-1)


def parse(value: object) -> Responsible | None:
    """A label's ``responsible`` entry; ``None`` (a clean run or a near miss) stays ``None``.

    Raises :class:`ValueError` naming the field at fault, for the caller to report with the file."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"responsible must be an object or null, got {type(value).__name__}")
    agent, tool, occurrence = value.get("agent"), value.get("tool"), value.get("occurrence", -1)
    if not isinstance(agent, str) or not agent_key(agent):
        raise ValueError(f"responsible.agent must name an agent, got {agent!r}")
    if tool is not None and (not isinstance(tool, str) or not tool):
        raise ValueError(f"responsible.tool must be a tool name or null, got {tool!r}")
    if not isinstance(occurrence, int) or isinstance(occurrence, bool) or occurrence == 0:
        raise ValueError(f"responsible.occurrence must be a non-zero integer (1 the first, -1 the last), got {occurrence!r}")
    return Responsible(agent, tool, occurrence)


def locate(run: Run, responsible: Responsible) -> str:
    """The span id of the step ``responsible`` points at in ``run``; :class:`Unresolved` says why none."""
    key = agent_key(responsible.agent)
    role = Role.LLM if responsible.tool is None else Role.TOOL
    steps = [s for s in run.steps if s.role is role and (responsible.tool is None or s.tool_name == responsible.tool)]
    mine = [s for s in steps if agent_key(step_agent(run, s) or "") == key]
    index = responsible.occurrence - 1 if responsible.occurrence > 0 else responsible.occurrence
    if -len(mine) <= index < len(mine):
        return mine[index].span_id
    what = "model calls" if responsible.tool is None else f"calls of tool {responsible.tool!r}"
    others = "" if mine else f" (agents with {what}: {', '.join(sorted({step_agent(run, s) or '?' for s in steps})) or 'none'})"
    raise Unresolved(f"occurrence {responsible.occurrence} of the {what} of agent {responsible.agent!r} is not in the run: "
                     f"it has {len(mine)}{others}")
