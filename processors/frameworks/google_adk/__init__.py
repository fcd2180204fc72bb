"""Google ADK: an agent hands over with ``transfer_to_agent(agent_name=...)``; its run limit
raises ``LlmCallsLimitExceededError``; its generated ids start ``adk-``."""

from __future__ import annotations

from mast_otel.processors.frameworks.table import Framework, StepBudget

# ``RunConfig.max_llm_calls`` counts model calls over one invocation; past it the run raises
# ``LlmCallsLimitExceededError`` ("Max number of llm calls limit of `8` exceeded"). Default 500.
STEP_BUDGET = StepBudget("max_llm_calls", "model calls", "model_call", stated=r"\bllm calls limit of `?(\d+)`?", default=500)

FRAMEWORK = Framework(
    name="google_adk",
    spellings=("Google ADK", "google-adk", "ADK"),
    limit_errors=(r"\bLlmCallsLimitExceeded\w*\b",),
    step_budgets=(STEP_BUDGET,),
    session_id_keys=("gcp.vertex.agent.session_id",),  # on its call_llm spans
    generated_id_prefixes=("adk",),
    handoff_target_keys=("agent_name",),
    agent_keys=("agent_name",),
)
