"""OpenLLMetry / Traceloop SDK: ``traceloop.span.kind`` marks agents, tools, workflows, tasks.

Its model-call spans use GenAI names (``gen_ai.*``, ``llm.request.type``) and are read by the
GenAI normalizer. Workflows and tasks are application structure, not steps: they pass through.
"""

from __future__ import annotations

from typing import Any, Mapping

from mast_otel.processors.ingest.normalize.common import agent_content, as_name, as_text, tool_content
from mast_otel.processors.model import Role

SPAN_KIND = "traceloop.span.kind"
_ROLES = {"agent": Role.AGENT, "tool": Role.TOOL}


def fields(name: str, attrs: Mapping[str, Any], limit: int) -> dict[str, Any] | None:
    kind = attrs.get(SPAN_KIND)
    role = _ROLES.get(kind) if isinstance(kind, str) else None
    if role is None:
        return None
    entity = as_name(attrs.get("traceloop.entity.name")) or as_name(name.rsplit(".", 1)[0])
    out: dict[str, Any] = {"role": role, "convention": "openllmetry"}
    session = attrs.get("traceloop.association.properties.session_id")
    if session is not None:
        out["conversation_id"] = as_text(session)
    inputs, outputs = attrs.get("traceloop.entity.input"), attrs.get("traceloop.entity.output")
    if role is Role.TOOL:
        out["tool_name"] = entity
        out.update(tool_content(inputs, outputs, limit))
    else:
        out["agent_name"] = entity
        out.update(agent_content(as_text(inputs), as_text(outputs), limit))
    return out
