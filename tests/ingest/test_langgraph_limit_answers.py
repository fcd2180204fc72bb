"""A LangGraph graph that stops itself gracefully at a limit, through OpenInference: the answer is
the last message of the graph's state (``output.value``), not the dump's opening text.

Synthetic spans made with the real OTel SDK, shaped as openinference-instrumentation-langchain
writes them (span names and kinds, ``output.value`` as LangChain's ``dumpd`` of the state):
``create_react_agent`` at its ``remaining_steps`` and ``create_agent`` with
``ModelCallLimitMiddleware(run_limit=6, exit_behavior="end")``."""

from __future__ import annotations

import json

import pytest

from mast_otel.processors.frameworks.langgraph import state_answer
from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.ingest.decode import decode_protobuf
from mast_otel.processors.model import Run

from .otlp import capture, protobuf_of

TASK = "The checkout service in namespace shop is down. Find out why and fix it."


def _message(kind: str, content: str, **extra) -> dict:
    return {"type": kind, "data": {"content": content, "additional_kwargs": {}, "response_metadata": {}, "type": kind,
                                   "name": None, "id": f"lc_run--{abs(hash(content)) % 10**8}", **extra}}


def _graph_run(answer: str, *, root_kind: str, root_name: str, calls: int = 6):
    provider, exporter = capture("lg-agent")
    tracer = provider.get_tracer("openinference.instrumentation.langchain")
    state = [_message("human", TASK)]
    with tracer.start_as_current_span(root_name, attributes={"openinference.span.kind": root_kind,
                                                             "input.value": json.dumps({"messages": [{"role": "user", "content": TASK}]})}) as root:
        for i in range(calls):
            call = {"name": "get_logs", "args": {"pod": "checkout", "since_minutes": 5 * (i + 1)}, "id": f"call_{i}"}
            with tracer.start_as_current_span("agent" if root_kind == "CHAIN" else "model", attributes={"openinference.span.kind": "CHAIN"}):
                with tracer.start_as_current_span("ChatOpenAI", attributes={
                        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
                        "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": TASK,
                        "llm.output_messages.0.message.role": "assistant",
                        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_logs",
                        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": json.dumps(call["args"]),
                        "llm.tools.0.tool.json_schema": json.dumps({"type": "function", "function": {"name": "get_logs"}}),
                        "llm.token_count.prompt": 200, "llm.token_count.completion": 20}):
                    pass
            state.append(_message("ai", "", tool_calls=[call]))
            if i < calls - 1:
                with tracer.start_as_current_span("tools", attributes={"openinference.span.kind": "CHAIN"}):
                    result = json.dumps({"pod": "checkout", "lines": [f"older line {i}"]})
                    with tracer.start_as_current_span("get_logs", attributes={
                            "openinference.span.kind": "TOOL", "tool.name": "get_logs",
                            "input.value": json.dumps(call["args"]), "output.value": result}):
                        pass
                state.append(_message("tool", result, tool_call_id=call["id"]))
        state.append(_message("ai", answer))
        root.set_attribute("output.value", json.dumps({"messages": state}))
    spans = decode_protobuf(protobuf_of(exporter.get_finished_spans())).spans
    return Run.from_spans(spans[0].trace_id, spans, completion="root_ended")


@pytest.mark.parametrize("answer, root_kind, root_name", [
    ("Sorry, need more steps to process this request.", "CHAIN", "LangGraph"),  # create_react_agent
    ("Model call limits exceeded: run limit (6/6)", "AGENT", "sre-agent"),  # ModelCallLimitMiddleware, exit_behavior="end"
])
def test_a_graph_that_ends_itself_at_its_limit_is_stopped_by_the_limit(answer, root_kind, root_name):
    run = _graph_run(answer, root_kind=root_kind, root_name=root_name)
    assert run.hints.final_answer == answer
    found = [f for f in rule_findings(run) if f.mode == "FM-1.5"]
    assert len(found) == 1 and "its final answer says so" in found[0].explanation


def test_a_graph_that_answers_is_not_stopped():
    run = _graph_run("Resolved: checkout was crash-looping; I restarted it and it is healthy now.",
                     root_kind="CHAIN", root_name="LangGraph", calls=2)
    assert "FM-1.5" not in {f.mode for f in rule_findings(run)}


def test_a_state_answer_is_the_last_message_only_when_the_model_side_wrote_it():
    assert state_answer(json.dumps({"messages": [_message("human", "hi"), _message("ai", "hello")]})) == "hello"
    assert state_answer(json.dumps({"messages": [_message("ai", "x"), _message("tool", "42")]})) is None
    assert state_answer(json.dumps({"messages": [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]})) == "ok"
    assert state_answer('{"messages": [') is None and state_answer("Resolved.") is None
