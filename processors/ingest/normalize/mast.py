"""mast-otel's own ``mast.*`` hints (DESIGN.md), applied on top of any convention.

Hints are what the application knows for certain (step budget, tool kind, verification
result, outcome); when present they override anything derived from content. Steps may also
name their enclosing agent (``gen_ai.agent.name``), read here for every convention.
"""

from __future__ import annotations

from typing import Any, Mapping

from mast_otel.wire import attributes as A
from mast_otel.processors.ingest.normalize.common import (    Table,
    apply_table,
    as_bool,
    as_float,
    as_int,
    as_name,
    as_str_tuple,
    as_text,
    cap,
    table,
)
from mast_otel.processors.model import AGENT, LLM, Role, RunHints


def _outcome(value: Any) -> str:
    outcome = as_name(value)
    return outcome if outcome in A.OUTCOMES else "unknown"


# RunHints fields on agent spans.
_RUN_HINTS: Table = table(
    (A.MAST_TASK_MAX_STEPS, "max_steps", as_int),
    (A.MAST_TASK_AMBIGUOUS, "ambiguous", as_bool),
    (A.MAST_TASK_CONSTRAINTS, "constraints", as_str_tuple),
    (A.MAST_AGENT_ROLE, "role", as_text),
    (A.MAST_AGENT_ALLOWED_TOOLS, "allowed_tools", as_str_tuple),
    (A.MAST_RUN_TERMINATION_REASON, "termination_reason", as_name),
    (A.MAST_RUN_CLAIMED_SUCCESS, "claimed_success", as_bool),
    (A.MAST_RUN_OUTCOME, "outcome", _outcome),
    (A.MAST_RUN_SCORE, "score", as_float),
)
# Span fields on every step, whichever convention wrote it: the iteration, the enclosing
# run's budget and agent (so the budget can be checked before the agent span, which ends
# last, arrives).
_STEP_HINTS: Table = table(
    (A.MAST_STEP_INDEX, "step_index", as_int),
    (A.MAST_TASK_MAX_STEPS, "step_budget", as_int),
    (A.GEN_AI_AGENT_NAME, "agent_name", as_name),
)
LLM_HINTS: Table = _STEP_HINTS + table(
    (A.MAST_LLM_INPUT_MESSAGE_COUNT, "input_message_count", as_int),
    (A.MAST_LLM_REQUESTED_TOOLS, "requested_tools", as_str_tuple),
)
TOOL_HINTS: Table = _STEP_HINTS + table(
    (A.MAST_TOOL_KIND, "tool_kind", as_name),
    (A.MAST_TOOL_ARGS_HASH, "args_hash", as_text),
    (A.MAST_TOOL_RESULT_HASH, "result_hash", as_text),
    (A.MAST_TOOL_VERIFICATION_PASSED, "verification_passed", as_bool),
)


def apply(span: Any, role: Role, attrs: Mapping[str, Any], limit: int) -> None:
    """Overlay the span's ``mast.*`` hints on the fields a convention normalizer set."""
    if role is AGENT:
        span.hints = run_hints(attrs, span.hints, limit)
    else:
        apply_table(span, attrs, LLM_HINTS if role is LLM else TOOL_HINTS)


def run_hints(attrs: Mapping[str, Any], derived: RunHints | None, limit: int) -> RunHints:
    """The agent span's run hints; ``derived`` holds task and answer read from content."""
    hints = derived or RunHints()
    apply_table(hints, attrs, _RUN_HINTS)
    answer = attrs.get(A.MAST_RUN_FINAL_ANSWER)
    if answer is not None:
        hints.final_answer = cap(as_text(answer), limit)
    return hints
