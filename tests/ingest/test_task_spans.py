"""OpenLLMetry ``task`` spans that are calls: LlamaIndex through OpenLLMetry writes every model and
tool call as a ``task`` span (synthetic spans made with the real OTel SDK, shaped as that
instrumentation writes them: its span names, ``traceloop.*`` keys and GenAI attributes)."""

from __future__ import annotations

import json

from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.ingest.decode import decode_protobuf
from mast_otel.processors.model import Role, Run

from .otlp import capture, protobuf_of

TASK = "What is 20+(2*4)? Calculate step by step."


def _react_run(content: bool = True):
    provider, exporter = capture("llamaindex-react")
    tracer = provider.get_tracer("opentelemetry.instrumentation.llamaindex")
    steps = [("multiply", {"a": 2, "b": 4}, "8"), ("add", {"a": 20, "b": 8}, "28")]

    def chat(i: int, reply: str) -> None:
        attrs = {"traceloop.span.kind": "task", "traceloop.entity.name": "Cohere", "traceloop.workflow.name": "ReActAgent",
                 "gen_ai.operation.name": "chat", "llm.request.type": "chat", "gen_ai.system": "Cohere",
                 "gen_ai.request.model": "command-r-plus", "gen_ai.response.model": "command-r-plus",
                 "gen_ai.usage.input_tokens": 300 + 40 * i, "gen_ai.usage.output_tokens": 30}
        if content:
            attrs |= {"gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "You are designed to help with a variety of tasks.",
                      "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": TASK,
                      "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": reply}
        with tracer.start_as_current_span("Cohere.task", attributes=attrs):
            pass

    with tracer.start_as_current_span("ReActAgent.workflow", attributes={
            "traceloop.span.kind": "workflow", "traceloop.entity.name": "ReActAgent", "traceloop.workflow.name": "ReActAgent"}):
        for i, (tool, args, result) in enumerate(steps):
            chat(i, f"Thought: I need a tool.\nAction: {tool}\nAction Input: {json.dumps(args)}")
            attrs = {"traceloop.span.kind": "task", "traceloop.entity.name": "call_tool", "traceloop.workflow.name": "ReActAgent",
                     "tool.name": tool, "tool.description": f"{tool}(a: int, b: int) -> int"}
            if content:
                attrs |= {"tool.arguments": json.dumps(args),
                          "traceloop.entity.input": json.dumps({"tool_call": {"tool_name": tool, "tool_kwargs": args}}),
                          "traceloop.entity.output": json.dumps({"content": result, "tool_name": tool, "raw_output": int(result)})}
            with tracer.start_as_current_span("call_tool.task", attributes=attrs):
                pass
        chat(len(steps), "Thought: I can answer without using any more tools.\nAnswer: 28")
        with tracer.start_as_current_span("parse_agent_output.task", attributes={
                "traceloop.span.kind": "task", "traceloop.entity.name": "parse_agent_output"}):
            pass
    spans = decode_protobuf(protobuf_of(exporter.get_finished_spans())).spans
    return Run.from_spans(spans[0].trace_id, spans, completion="root_ended")


def test_a_llamaindex_react_run_through_openllmetry_shows_its_model_and_tool_calls():
    run = _react_run()
    assert [s.role for s in run.steps] == [Role.LLM, Role.TOOL, Role.LLM, Role.TOOL, Role.LLM]
    assert [s.tool_name for s in run.tool_calls] == ["multiply", "add"]
    assert {s.model for s in run.llm_calls} == {"command-r-plus"} and run.llm_calls[0].input_tokens == 300
    assert run.tool_calls[0].args_hash and run.tool_calls[0].args_hash != run.tool_calls[1].args_hash
    assert run.llm_calls[-1].output_text.endswith("Answer: 28")
    assert all(s.convention == "openllmetry" for s in run.steps)
    assert run.root is not None and run.agent == "ReActAgent"
    assert not any(s.role is not Role.OTHER for s in run.spans if s.name == "parse_agent_output.task")
    assert rule_findings(run) == []


def test_with_content_off_the_calls_are_still_read():
    run = _react_run(content=False)
    assert [s.role for s in run.steps] == [Role.LLM, Role.TOOL, Role.LLM, Role.TOOL, Role.LLM]
    assert [s.tool_name for s in run.tool_calls] == ["multiply", "add"]
    assert rule_findings(run) == []
