"""smolagents: an agent ends its run by calling its ``final_answer`` tool (``FinalAnswerTool``);
at ``max_steps`` it asks the model for an answer in its own words; its run span states the
step budget (``smolagents.max_steps``, OpenInference).

Through OpenInference a tool's value is the Python call's record (``{"args": [...],
"kwargs": {...}}``): what the tool took is its keyword arguments.
"""

from __future__ import annotations

from typing import Any

from mast_otel.processors.frameworks.table import NOT_AN_ENVELOPE, Framework, StepBudget

MAX_STEPS = "smolagents.max_steps"  # an agent's ``max_steps``, on its run span
# ``max_steps`` counts action steps, one ``Step N`` span each, per run of the agent (a managed agent
# called three times has three budgets); planning calls and the answer it asks for once the budget is
# spent sit right below the run span, outside every step. It stops the agent once its steps reach
# the budget (default 20; the run span always states it).
STEP_BUDGET = StepBudget("max_steps", "action steps", "own_span", keys=(MAX_STEPS,), default=20, stops_at_budget=True)
_CALL_KEYS = frozenset({"args", "kwargs", "sanitize_inputs_outputs"})


def call_record(value: dict) -> Any:
    """A Python call's record with keyword arguments only: the keyword arguments."""
    if value.keys() <= _CALL_KEYS and not value.get("args"):
        return value["kwargs"]
    return NOT_AN_ENVELOPE


FRAMEWORK = Framework(
    name="smolagents",
    spellings=("smolagents",),
    limit_errors=(r"\bAgentMaxSteps\w*\b",),
    limit_answers=(
        r"\bit got stuck and failed to do so\b|^Based on the above, please provide an answer to the following user task\b",
    ),
    final_answer_tools=frozenset({"final_answer", "finalanswer"}),
    envelopes=(("kwargs", call_record),),
    step_budgets=(STEP_BUDGET,),
)
