"""Helpers for the session tests: turns of one conversation emitted through the OTel SDK, each its own trace."""

from __future__ import annotations

from typing import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from mast_otel.processors.conversations.model import SessionFinding, SpanRef, Turn
from mast_otel.processors.model import Role
from mast_otel.wire import attributes as A


def emit_turn(provider: TracerProvider, session_id: str | None, *, tool_args: str = "a", agent: str = "support",
              repeats: int = 1, result: str | None = None) -> str:
    """One turn: an agent run (its own trace) with one model call and ``repeats`` identical tool
    calls (with ``result`` as their result hash when given), every span carrying
    ``gen_ai.conversation.id`` when ``session_id`` is given; the trace id."""
    tracer = provider.get_tracer("tests.sessions")
    session = {A.GEN_AI_CONVERSATION_ID: session_id} if session_id else {}
    root = tracer.start_span(f"invoke_agent {agent}", context=trace.set_span_in_context(trace.INVALID_SPAN), attributes={
        A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT, A.GEN_AI_AGENT_NAME: agent, **session})
    ctx = trace.set_span_in_context(root)
    with tracer.start_as_current_span("chat gpt-4o", context=ctx, attributes={
            A.GEN_AI_OPERATION_NAME: A.OP_CHAT, A.GEN_AI_REQUEST_MODEL: "gpt-4o", A.MAST_STEP_INDEX: 0, **session}):
        pass
    for i in range(repeats):
        with tracer.start_as_current_span("execute_tool lookup", context=ctx, attributes={
                A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL, A.GEN_AI_TOOL_NAME: "lookup", A.MAST_STEP_INDEX: i,
                A.MAST_TOOL_ARGS_HASH: tool_args, **({A.MAST_TOOL_RESULT_HASH: result} if result else {}), **session}):
            pass
    root.set_attribute(A.MAST_RUN_TERMINATION_REASON, "final_answer")
    root.end()
    return format(root.get_span_context().trace_id, "032x")


def repeated_lookup(turns: Sequence[Turn], config=None) -> list[SessionFinding]:
    """FM-1.3 when a later turn calls a tool with the arguments an earlier turn already used."""
    seen: dict[tuple, list[SpanRef]] = {}
    findings = []
    for turn in turns:
        for span in turn.run.spans:
            if span.role is not Role.TOOL:
                continue
            refs = seen.setdefault((span.tool_name, span.args_hash), [])
            refs.append(SpanRef(turn.trace_id, span.span_id))
            if len(refs) == 2:
                findings.append(SessionFinding("FM-1.3", 0.8, f"{span.tool_name} repeated across turns", tuple(refs),
                                               turn.trace_id, detector="test.session_repeat"))
    return findings[:1]
