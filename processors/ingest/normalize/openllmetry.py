"""OpenLLMetry / Traceloop SDK: ``traceloop.span.kind`` marks agents, tools, workflows, tasks.

Its model-call spans use GenAI names (``gen_ai.*``, ``llm.request.type``) and are read by the
GenAI normalizer. Workflows and tasks are application structure, not steps: they pass through, except a
parentless workflow, which stands for the run (see ``Span.workflow``), an agno team's workflow, which
is its leader agent, and a task that is itself a call.
Some instrumentations (LlamaIndex's) write every call as a ``task``: a tool call (``call_tool.task``
with ``tool.name``) is a tool call, and a task carrying a model call's GenAI attributes
(``Cohere.task`` with ``gen_ai.operation.name=chat``) is read as that model call; a ReAct agent's
model call asks for its tool in text (``Action: get_pods`` then ``Action Input: ...``), read as the
tool it requested. LlamaIndex's tool call records its result under ``tool_output`` beside a fresh
``tool_id``: the result is that output. A ``handoff`` span (the OpenAI Agents instrumentation's
``<from> → <to>.handoff``) is the handing agent's transfer, read as a handoff tool call ``handoff to
<to>``; a target written ``unknown`` is left for the agent that starts next.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from mast_otel.processors.frameworks import agno, llamaindex
from mast_otel.processors.ingest.normalize import genai
from mast_otel.processors.ingest.normalize.common import as_name, as_text, maybe_json, set_agent_content, set_tool_content
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
    team = attrs.get(agno.TEAM_NAME) if kind == "workflow" else None
    if team is not None:
        role = AGENT  # an agno team's span is its leader agent, whose model calls sit right below it
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
    if span.workflow and entity and entity.endswith(".workflow"):  # LlamaIndex: "ReActAgent.workflow"
        entity = entity[: -len(".workflow")] or entity
    span.convention = "openllmetry"
    session = attrs.get("traceloop.association.properties.session_id")
    if session is not None:
        span.conversation_id = as_text(session)
    inputs, outputs = attrs.get("traceloop.entity.input"), attrs.get("traceloop.entity.output")
    if role is TOOL:
        span.tool_name = entity
        unwrapped = agno.execution_result(outputs)
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
    if tool is None:
        return _workflow_state(span, attrs.get("traceloop.entity.output"))
    span.role = TOOL
    span.convention = "openllmetry"
    span.tool_name = tool
    description = attrs.get("tool.description")
    if description is not None:
        span.tool_description = as_name(description)
    args = attrs.get("tool.arguments")
    set_tool_content(span, args if args is not None else attrs.get("traceloop.entity.input"),
                     _tool_output(attrs.get("traceloop.entity.output")), limit)
    return TOOL


def _workflow_state(span: Any, output: Any) -> Role | None:
    """A LlamaIndex AgentWorkflow step whose content names the workflow's current agent: kept as a
    marker agent span that hint derivation reads for the root agent's name, then drops."""
    name = llamaindex.root_agent_name(output) if isinstance(output, str) else None
    if name is None:
        return None
    span.role, span.convention, span.agent_name = AGENT, "openllmetry", name
    span.workflow = True  # not a real agent span: the workflow span keeps standing for the run
    span.derived = {"agent": llamaindex.STATE_MARKER}
    return AGENT


def _tool_output(value: Any) -> Any:
    """What the tool returned: LlamaIndex's call record (``tool_name``, ``tool_kwargs``, a fresh
    ``tool_id``, ``tool_output``) holds it under ``tool_output``."""
    if isinstance(value, str) and '"tool_output"' in value:
        parsed = maybe_json(value)
        if isinstance(parsed, dict) and "tool_output" in parsed:
            return parsed["tool_output"]
    return value


def handoff_tool_name(name: str) -> str:
    """``coordinator → operator.handoff`` -> ``handoff to operator``; ``handoff`` when the target is unknown."""
    head = name[:-len(_HANDOFF_SUFFIX)] if name.endswith(_HANDOFF_SUFFIX) else name
    target = head.rsplit("→", 1)[1].strip() if "→" in head else ""
    return "handoff" if target.lower() in _UNKNOWN_TARGETS else f"handoff to {target}"
