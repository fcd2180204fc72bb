"""OpenAI Agents SDK: its turn limit raises ``MaxTurnsExceeded``; a handoff is a tool the model
calls (``transfer_to_<agent>``), which OpenLLMetry writes as a ``handoff`` span."""

from __future__ import annotations

from mast_otel.processors.frameworks.table import Framework, StepBudget

# ``max_turns`` counts model turns (one model call each, with the tool calls it asked for) over the
# whole run, handoffs included; past it the run raises ``MaxTurnsExceeded`` ("Max turns exceeded:
# {'max_turns': 8}"). Default 10. No span states it.
STEP_BUDGET = StepBudget("max_turns", "model turns", "model_call", stated=r"max turns \((\d+)\) exceeded|'max_turns':\s*(\d+)",
                         default=10)

FRAMEWORK = Framework(
    name="openai_agents",
    spellings=("OpenAI Agents", "openai-agents", "Agents SDK"),
    limit_errors=(r"\bMaxTurnsExceeded\b",),
    step_budgets=(STEP_BUDGET,),
)
