"""agno: a ``Team`` is its leader agent, which runs member agents through a delegation tool.

The leader's model calls belong to the team itself: OpenInference writes the team as an agent
span (``<team>.run``), OpenLLMetry as a workflow span (``<team>.team``, ``agno.team.name``), which
here is the leader agent, not application structure. The leader calls
``delegate_task_to_member(member_id, task)`` (``delegate_task_to_members(task)`` when it
delegates to all); the member's agent span follows the tool span as its sibling, not inside it.
"""

from __future__ import annotations

import re

from mast_otel.processors.frameworks.table import Framework, StepBudget

TEAM_NAME = "agno.team.name"
# The delegation tools' argument naming the member (its URL-safe name).
MEMBER_KEY = "member_id"

# OpenLLMetry writes a tool's output as the repr of agno's ``FunctionExecutionResult``:
# ``status='success' result=<the value> error=None updated_session_state=None ...``.
_EXECUTION_RESULT = re.compile(r"^status='(?P<status>\w+)' result=(?P<result>.*?) error=(?P<error>.*?)"
                               r" updated_session_state=", re.S)


def execution_result(output: object) -> tuple[str, str | None] | None:
    """``(result, error)`` of a ``FunctionExecutionResult`` repr (``error`` ``None`` when it succeeded);
    ``None`` for any other value."""
    if not isinstance(output, str) or not output.startswith("status='"):
        return None
    found = _EXECUTION_RESULT.match(output)
    if found is None:
        return None
    error = found["error"]
    failed = found["status"] != "success" or error != "None"
    return found["result"], (error if error != "None" else found["status"]) if failed else None


# ``tool_call_limit`` counts an agent's tool calls in one run; once reached, further calls are refused
# and the model answers. No default (no limit); no span states it.
STEP_BUDGET = StepBudget("tool_call_limit", "tool calls", "tool_call")

FRAMEWORK = Framework(
    name="agno",
    step_budgets=(STEP_BUDGET,),
    spellings=("Agno",),
    leader_keys=(TEAM_NAME,),
    tool_output_records=(execution_result,),
    handoff_target_keys=(MEMBER_KEY,),
    agent_keys=(MEMBER_KEY,),
)
