"""OpenAI Agents SDK: its turn limit raises ``MaxTurnsExceeded``; a handoff is a tool the model
calls (``transfer_to_<agent>``), which OpenLLMetry writes as a ``handoff`` span."""

from __future__ import annotations

from mast_otel.processors.frameworks.table import Framework

FRAMEWORK = Framework(
    name="openai_agents",
    spellings=("OpenAI Agents", "openai-agents", "Agents SDK"),
    limit_errors=(r"\bMaxTurnsExceeded\b",),
)
