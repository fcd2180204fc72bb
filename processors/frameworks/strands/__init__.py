"""Strands Agents: a Swarm hands over with ``handoff_to_agent(agent_name, message)``.

The receiving agent of a Swarm handoff never gets the conversation: it starts afresh from a
"Context:" message (the handoff message, the user's request, the agents so far). A small
receiving context is that design, not a dropped conversation.
"""

from __future__ import annotations

from mast_otel.processors.frameworks.table import Framework, StepBudget

TOOL_STATUS = "gen_ai.tool.status"  # not in the GenAI conventions: "success" / "error" on each tool span
# Handoff tools whose receiver starts from a fresh context by design.
FRESH_START_HANDOFFS = frozenset({"handoff_to_agent"})


# A run's ``limits={"turns": N}`` counts event loop cycles (one model call and the tools it asked for,
# each in an ``execute_event_loop_cycle`` span); at it the run stops with stop reason ``limit_turns``.
# No default (no limit); no span states it.
STEP_BUDGET = StepBudget("turns limit", "event loop cycles", "own_span", stops_at_budget=True)

FRAMEWORK = Framework(
    name="strands",
    step_budgets=(STEP_BUDGET,),
    spellings=("Strands", "strands-agents", "strands_agents"),
    fresh_start_handoffs=FRESH_START_HANDOFFS,
    tool_status_keys=(TOOL_STATUS,),
    handoff_target_keys=("agent_name",),
    agent_keys=("agent_name",),
)
