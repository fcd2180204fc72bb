"""Google ADK: an agent hands over with ``transfer_to_agent(agent_name=...)``; its run limit
raises ``LlmCallsLimitExceededError``; its generated ids start ``adk-``."""

from __future__ import annotations

from mast_otel.processors.frameworks.table import Framework

FRAMEWORK = Framework(
    name="google_adk",
    spellings=("Google ADK", "google-adk", "ADK"),
    limit_errors=(r"\bLlmCallsLimitExceeded\w*\b",),
    session_id_keys=("gcp.vertex.agent.session_id",),  # on its call_llm spans
    generated_id_prefixes=("adk",),
    handoff_target_keys=("agent_name",),
    agent_keys=("agent_name",),
)
