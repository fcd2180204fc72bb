"""OpenLLMetry / Traceloop SDK: ``traceloop.span.kind`` marks agents, tools, workflows, tasks.

Its model-call spans use GenAI names (``gen_ai.*``, ``llm.request.type``) and are read by the
GenAI normalizer. Workflows and tasks are application structure, not steps: they pass through, except a
parentless workflow, which stands for the run (see ``Span.workflow``), a team's workflow carrying a
framework's leader key, which is its leader agent, and a task that is itself a call.
Some instrumentations write every call as a ``task``: a tool call (``call_tool.task``
with ``tool.name``) is a tool call, and a task carrying a model call's GenAI attributes
(``Cohere.task`` with ``gen_ai.operation.name=chat``) is read as that model call; a ReAct agent's
model call asks for its tool in text (``Action: get_pods`` then ``Action Input: ...``), read as the
tool it requested. A framework's record of a tool's output is read through its table (see
``processors/frameworks/``). A ``handoff`` span (``<from> → <to>.handoff``) is the handing
agent's transfer, read as a handoff tool call ``handoff to <to>``; a target written ``unknown``
is left for the agent that starts next.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from mast_otel.processors.frameworks import registry
from mast_otel.processors.ingest.normalize import genai
from mast_otel.processors.ingest.normalize.common import as_name, as_text, set_agent_content, set_tool_content
from mast_otel.processors.model import AGENT, LLM, TOOL, Role

SPAN_KIND = "traceloop.span.kind"
_ROLES = {"agent": AGENT, "tool": TOOL, "handoff": TOOL}
_HANDOFF_SUFFIX = ".handoff"
_UNKNOWN_TARGETS = frozenset({"", "unknown", "none", "null"})


def fill(span: Any, name: str, attrs: Mapping[str, Any], limit: int) -> Role | None:
    """Set an agent or tool span's fields on ``span``; its role, or ``None`` (nothing set)."""
    kind = attrs.get(SPAN_KIND)
    role = _ROLES.get(kind) if isinstance(kind, str) else None
    if role is None and kind == "task":
        return _task(span, name, attrs, limit)
    frameworks = registry()
    team = next((t for key in frameworks.leader_keys if (t := attrs.get(key)) is not None), None) \
        if kind == "workflow" else None
    if team is not None:
        role = AGENT  # a team's span that is its leader agent, whose model calls sit right below it
    elif role is None:
        if kind != "workflow" or span.parent_span_id is not None:
            return None
        role = AGENT  # a parentless workflow is the run when no agent span says so
        span.workflow = True
    span.role = role
    if kind == "handoff":
        span.convention = "openllmetry"
        span.tool_name = handoff_tool_name(name)
        return role
    entity = as_name(team) or as_name(attrs.get("traceloop.entity.name")) \
        or as_name(attrs.get("gen_ai.agent.name") if role is AGENT else None) or as_name(name.rsplit(".", 1)[0])
    if span.workflow and entity:  # a name a framework gives its workflow span after its agent's
        suffix = next((x for x in frameworks.workflow_suffixes if entity.endswith(x)), None)
        if suffix is not None:
            entity = entity[: -len(suffix)] or entity
    span.convention = "openllmetry"
    session = attrs.get("traceloop.association.properties.session_id")
    if session is not None:
        span.conversation_id = as_text(session)
    inputs, outputs = attrs.get("traceloop.entity.input"), attrs.get("traceloop.entity.output")
    if role is TOOL:
        span.tool_name = entity
        unwrapped = next((u for read in frameworks.tool_output_records if (u := read(outputs)) is not None), None)
        if unwrapped is not None:
            outputs, failure = unwrapped
            if failure is not None:
                span.error, span.error_type = True, "returned_error"
        set_tool_content(span, inputs, outputs, limit)
    else:
        span.agent_name = entity
        set_agent_content(span, as_text(inputs), as_text(outputs), limit)
    return role


_TASK_TOOL_NAMES = ("tool.name", "gen_ai.tool.name")
# A ReAct step's request in text: "Action: <tool>" followed by its "Action Input:" line.
_REACT_ACTION = re.compile(r"^(?:\w+: )?Action:[ \t]*([\w.-]+)[ \t]*\n(?:\w+: )?Action Input:", re.MULTILINE)


def _task(span: Any, name: str, attrs: Mapping[str, Any], limit: int) -> Role | None:
    """A ``task`` span that is a call: a model call (GenAI attributes saying so) or a tool call (a tool's name)."""
    if genai.role_of(name, attrs) is LLM:
        role = genai.fill(span, name, attrs, limit)
        if role is not None:
            span.convention = "openllmetry"
            if not span.requested_tools and span.output_text and "Action:" in span.output_text:
                found = _REACT_ACTION.search(span.output_text)  # a ReAct agent asks for its tool in text
                if found is not None:
                    span.requested_tools = (found.group(1),)
        return role
    tool = next((t for key in _TASK_TOOL_NAMES if (t := as_name(attrs.get(key)))), None)
    frameworks = registry()
    if tool is None:  # a framework's state marker, or no call
        output = attrs.get("traceloop.entity.output")
        return AGENT if any(mark(span, output) for mark in frameworks.state_markers) else None
    span.role = TOOL
    span.convention = "openllmetry"
    span.tool_name = tool
    description = attrs.get("tool.description")
    if description is not None:
        span.tool_description = as_name(description)
    args = attrs.get("tool.arguments")
    output = attrs.get("traceloop.entity.output")
    unwrapped = next((u for read in frameworks.task_tool_outputs if (u := read(output)) is not None), None)
    set_tool_content(span, args if args is not None else attrs.get("traceloop.entity.input"),
                     unwrapped[0] if unwrapped is not None else output, limit)
    return TOOL


def handoff_tool_name(name: str) -> str:
    """``coordinator → operator.handoff`` -> ``handoff to operator``; ``handoff`` when the target is unknown."""
    head = name[:-len(_HANDOFF_SUFFIX)] if name.endswith(_HANDOFF_SUFFIX) else name
    target = head.rsplit("→", 1)[1].strip() if "→" in head else ""
    return "handoff" if target.lower() in _UNKNOWN_TARGETS else f"handoff to {target}"
