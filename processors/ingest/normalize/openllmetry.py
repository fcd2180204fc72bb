"""OpenLLMetry / Traceloop SDK: ``traceloop.span.kind`` marks agents, tools, workflows, tasks.

Its model-call spans use GenAI names (``gen_ai.*``, ``llm.request.type``) and are read by the
GenAI normalizer. Workflows and tasks are application structure, not steps: they pass through, except a
parentless workflow, which stands for the run (see ``Span.workflow``).
"""

from __future__ import annotations

from typing import Any, Mapping

from mast_otel.processors.ingest.normalize.common import as_name, as_text, set_agent_content, set_tool_content
from mast_otel.processors.model import AGENT, TOOL, Role

SPAN_KIND = "traceloop.span.kind"
_ROLES = {"agent": AGENT, "tool": TOOL}


def fill(span: Any, name: str, attrs: Mapping[str, Any], limit: int) -> Role | None:
    """Set an agent or tool span's fields on ``span``; its role, or ``None`` (nothing set)."""
    kind = attrs.get(SPAN_KIND)
    role = _ROLES.get(kind) if isinstance(kind, str) else None
    if role is None:
        if kind != "workflow" or span.parent_span_id is not None:
            return None
        role = AGENT  # a parentless workflow is the run when no agent span says so
        span.workflow = True
    entity = as_name(attrs.get("traceloop.entity.name")) or as_name(name.rsplit(".", 1)[0])
    span.role = role
    span.convention = "openllmetry"
    session = attrs.get("traceloop.association.properties.session_id")
    if session is not None:
        span.conversation_id = as_text(session)
    inputs, outputs = attrs.get("traceloop.entity.input"), attrs.get("traceloop.entity.output")
    if role is TOOL:
        span.tool_name = entity
        set_tool_content(span, inputs, outputs, limit)
    else:
        span.agent_name = entity
        set_agent_content(span, as_text(inputs), as_text(outputs), limit)
    return role
