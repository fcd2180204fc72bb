"""mast-otel's own ``mast.*`` hints (docs/conventions.md), applied on top of any convention.

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


def apply(span: Any, role: Role, attrs: Mapping[str, Any], limit: int) -> None:
    """Overlay the span's ``mast.*`` hints on the fields a convention normalizer set."""
    if role is AGENT:
        span.hints = run_hints(attrs, span.hints, limit)
    else:
        apply_step(span, role, attrs)


def apply_step(span: Any, role: Role, attrs: Mapping[str, Any]) -> None:
    """A model or tool call's hints. On every step, whichever convention wrote it: the
    iteration, the enclosing run's budget and agent (so the budget can be checked before the
    agent span, which ends last, arrives); then the model call's or the tool call's own.

    Written out field by field rather than as a table: this runs for nearly every span, where
    a table costs a turn of its loop for each absent hint and a ``setattr`` for each present
    one. Values the decoder already typed as the converter would (an int for ``as_int``) are
    set without the call."""
    get = attrs.get
    value = get(A.MAST_STEP_INDEX)
    if value is not None:
        span.step_index = value if type(value) is int else as_int(value)
    value = get(A.MAST_TASK_MAX_STEPS)
    if value is not None:
        span.step_budget = value if type(value) is int else as_int(value)
    value = get(A.GEN_AI_AGENT_NAME)
    if value is not None:
        span.agent_name = as_name(value)
    if role is LLM:
        value = get(A.MAST_LLM_INPUT_MESSAGE_COUNT)
        if value is not None:
            span.input_message_count = value if type(value) is int else as_int(value)
        value = get(A.MAST_LLM_REQUESTED_TOOLS)
        if value is not None:
            span.requested_tools = as_str_tuple(value)
        return
    value = get(A.MAST_TOOL_KIND)
    if value is not None:
        span.tool_kind = as_name(value)
    value = get(A.MAST_TOOL_ARGS_HASH)
    if value is not None:
        span.args_hash = value if type(value) is str else as_text(value)
    value = get(A.MAST_TOOL_RESULT_HASH)
    if value is not None:
        span.result_hash = value if type(value) is str else as_text(value)
    value = get(A.MAST_TOOL_VERIFICATION_PASSED)
    if value is not None:
        span.verification_passed = value if type(value) is bool else as_bool(value)


def run_hints(attrs: Mapping[str, Any], derived: RunHints | None, limit: int) -> RunHints:
    """The agent span's run hints; ``derived`` holds task and answer read from content."""
    hints = derived or RunHints()
    apply_table(hints, attrs, _RUN_HINTS)
    if hints.budget_framework is not None and attrs.get(A.MAST_TASK_MAX_STEPS) is not None:
        hints.budget_framework = None  # mast-otel's own budget, counted in its own iterations
    answer = attrs.get(A.MAST_RUN_FINAL_ANSWER)
    if answer is not None:
        hints.final_answer = cap(as_text(answer), limit)
    return hints
