"""Pydantic AI (its built-in OpenTelemetry spans, also under OpenInference's span processor).

A structured result is returned through an *output tool*: the model ends the run by calling
``final_result`` (``final_result_<Type>`` when there are several output types), which Pydantic
AI validates and returns without an ``execute_tool`` span. A last model turn that calls it is
the run's answer, not a request for more work. Each model call lists the tools it offered in
``model_request_parameters`` (written with content capture off too): its ``output_tools`` are
those answer tools. With content capture on, the agent span keeps the result in
``final_result``. Pydantic AI never stops a run quietly: its limits raise
``UsageLimitExceeded`` on the agent span, before the request that would pass them (so a run
can end with no model call at all).
"""

from __future__ import annotations

import json
from typing import Any

from mast_otel.processors.frameworks.table import Framework, StepBudget

AGENT_RESULT = "final_result"  # the agent span's result (content capture on)
REQUEST_PARAMETERS = "model_request_parameters"  # on each model call: the tools offered, output tools apart
OUTPUT_TOOL = "final_result"
_NO_OUTPUT_TOOLS = '"output_tools":[]'


def is_output_tool(name: str) -> bool:
    """Whether ``name`` is one of Pydantic AI's default output tool names."""
    return name == OUTPUT_TOOL or name.startswith(OUTPUT_TOOL + "_")


def output_tools(parameters: Any) -> tuple[str, ...]:
    """The names of the output tools a ``model_request_parameters`` value offered (none: ``()``)."""
    if not isinstance(parameters, str) or _NO_OUTPUT_TOOLS in parameters or '"output_tools"' not in parameters:
        return ()  # the usual call offers none (told without parsing)
    try:
        parsed = json.loads(parameters)
    except ValueError:
        return ()
    tools = parsed.get("output_tools") if isinstance(parsed, dict) else None
    if not isinstance(tools, list):
        return ()
    return tuple(t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str) and t["name"])


def result_of(value: Any) -> str | None:
    """The agent span's ``final_result`` as answer text (a structured result as its JSON)."""
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


# ``UsageLimits`` counts model requests (``request_limit``, default 50) and tool calls
# (``tool_calls_limit``, no default) over one run; the request that would pass either raises
# ``UsageLimitExceeded`` ("The next request would exceed the request_limit of 8"), before it is sent.
# No span states them.
REQUEST_BUDGET = StepBudget("request_limit", "model requests", "model_call", stated=r"\brequest_limit of (\d+)\b", default=50)
TOOL_CALL_BUDGET = StepBudget("tool_calls_limit", "tool calls", "tool_call", stated=r"\btool_calls_limit of (\d+)\b")

FRAMEWORK = Framework(
    name="pydantic_ai",
    step_budgets=(REQUEST_BUDGET, TOOL_CALL_BUDGET),
    spellings=("Pydantic AI", "pydantic-ai", "PydanticAI"),
    limit_errors=(r"\bUsageLimitExceeded\b",),
    final_answer_tools=frozenset({OUTPUT_TOOL}),
    answer_tool_prefixes=(OUTPUT_TOOL + "_",),
    agent_answers=((AGENT_RESULT, result_of),),
    answer_tool_keys=((REQUEST_PARAMETERS, output_tools),),
)
