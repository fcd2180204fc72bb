"""OpenLLMetry / Traceloop SDK: ``traceloop.span.kind`` marks agents, tools, workflows, tasks.

Its model-call spans use GenAI names (``gen_ai.*``, ``llm.request.type``) and are read by the
GenAI normalizer. Workflows and tasks are application structure, not steps: they pass through, except a
parentless workflow, which stands for the run (see ``Span.workflow``), and an agno team's workflow,
which is its leader agent. A ``handoff`` span (the OpenAI
Agents instrumentation's ``<from> → <to>.handoff``) is the handing agent's transfer, read as a handoff
tool call ``handoff to <to>``; a target written ``unknown`` is left for the agent that starts next.
"""

from __future__ import annotations

from typing import Any, Mapping

from mast_otel.processors.frameworks import agno
from mast_otel.processors.ingest.normalize.common import as_name, as_text, set_agent_content, set_tool_content
from mast_otel.processors.model import AGENT, TOOL, Role

SPAN_KIND = "traceloop.span.kind"
_ROLES = {"agent": AGENT, "tool": TOOL, "handoff": TOOL}
_HANDOFF_SUFFIX = ".handoff"
_UNKNOWN_TARGETS = frozenset({"", "unknown", "none", "null"})


def fill(span: Any, name: str, attrs: Mapping[str, Any], limit: int) -> Role | None:
    """Set an agent or tool span's fields on ``span``; its role, or ``None`` (nothing set)."""
    kind = attrs.get(SPAN_KIND)
    role = _ROLES.get(kind) if isinstance(kind, str) else None
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


def handoff_tool_name(name: str) -> str:
    """``coordinator → operator.handoff`` -> ``handoff to operator``; ``handoff`` when the target is unknown."""
    head = name[:-len(_HANDOFF_SUFFIX)] if name.endswith(_HANDOFF_SUFFIX) else name
    target = head.rsplit("→", 1)[1].strip() if "→" in head else ""
    return "handoff" if target.lower() in _UNKNOWN_TARGETS else f"handoff to {target}"
