"""Normalization as a pure function: a span's name and attributes in, Span fields out."""

from __future__ import annotations

import json

from mast_otel.wire import attributes as A
from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.ingest.normalize import normalize
from mast_otel.processors.model import Role


def test_spans_no_convention_claims_pass_through():
    assert normalize("GET /pods", {"http.method": "GET"}) is None
    assert normalize("embeddings m", {A.GEN_AI_OPERATION_NAME: "embeddings", A.GEN_AI_REQUEST_MODEL: "m"}) is None
    assert normalize("retrieve", {"openinference.span.kind": "RETRIEVER"}) is None
    assert normalize("app.task", {"traceloop.span.kind": "task"}) is None


def test_a_parentless_workflow_or_chain_stands_for_the_run():
    """LlamaIndex agents (OpenInference) and plain OpenLLMetry workflows have no agent span: their
    parentless chain or workflow is the run (a real agent span of the trace takes precedence, see
    Run.from_spans). With a parent, such spans are application structure and pass through."""
    from mast_otel.processors.model import Run, Span

    for name, attrs in (("FunctionAgent.run", {"openinference.span.kind": "CHAIN"}),
                        ("app.workflow", {"traceloop.span.kind": "workflow"})):
        fields = normalize(name, attrs)
        assert fields["role"] is Role.AGENT and fields["workflow"] is True
    trace = "ab" * 16
    workflow = Span(trace, "01" * 8, None, "Crew.kickoff", 1, 9, role=Role.AGENT, agent_name="Crew", workflow=True)
    agent = Span(trace, "02" * 8, "01" * 8, "sre-agent._execute_core", 2, 8, role=Role.AGENT, agent_name="sre-agent")
    tool = Span(trace, "03" * 8, "02" * 8, "get_pods", 3, 4, role=Role.TOOL, tool_name="get_pods")
    run = Run.from_spans(trace, [workflow, agent, tool])
    assert run.root is agent and run.agent == "sre-agent" and workflow not in run.spans
    alone = Run.from_spans(trace, [workflow, tool])
    assert alone.root is workflow and alone.agent == "Crew"


def test_deprecated_genai_names_and_flattened_messages():
    """The form older OpenLLMetry versions wrote: gen_ai.system, prompt_tokens, gen_ai.prompt.N.*."""
    fields = normalize(
        "openai.chat",
        {
            A.GEN_AI_SYSTEM: "openai",
            "llm.request.type": "chat",
            A.GEN_AI_REQUEST_MODEL: "gpt-4",
            A.GEN_AI_USAGE_PROMPT_TOKENS: "31",
            A.GEN_AI_USAGE_COMPLETION_TOKENS: 9,
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "you are an SRE",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "pods?",
            "gen_ai.prompt.10.role": "user",
            "gen_ai.prompt.10.content": "eleventh",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
            "gen_ai.completion.0.tool_calls.0.name": "kubectl_get",
            "gen_ai.completion.0.tool_calls.1.name": "kubectl_logs",
        },
    )
    assert fields["role"] is Role.LLM and fields["convention"] == "openllmetry"
    assert (fields["model"], fields["provider"], fields["input_tokens"], fields["output_tokens"]) == ("gpt-4", "openai", 31, 9)
    assert fields["input_message_count"] == 3
    assert fields["input_text"].splitlines() == ["system: you are an SRE", "user: pods?", "user: eleventh"]
    assert fields["requested_tools"] == ("kubectl_get", "kubectl_logs")


def test_current_genai_parts_messages():
    output = [{"role": "assistant", "parts": [{"type": "text", "content": "checking"}, {"type": "tool_call", "name": "get_pods", "arguments": {}}]}]
    fields = normalize(
        "chat m",
        {
            A.GEN_AI_OPERATION_NAME: "chat",
            A.GEN_AI_PROVIDER_NAME: "anthropic",
            A.GEN_AI_REQUEST_MODEL: "m",
            A.GEN_AI_RESPONSE_MODEL: "m-2025",
            A.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]),
            A.GEN_AI_OUTPUT_MESSAGES: json.dumps(output),
        },
    )
    assert (fields["model"], fields["request_model"], fields["provider"]) == ("m-2025", "m", "anthropic")
    assert fields["input_message_count"] == 1 and fields["requested_tools"] == ("get_pods",)
    assert fields["output_text"] == "assistant: checking"


def test_genai_tool_span_hashes_content_like_the_instrumentation():
    args = {"namespace": "prod", "kind": "pods"}
    fields = normalize(
        "execute_tool kubectl_get",
        {A.GEN_AI_OPERATION_NAME: "execute_tool", A.GEN_AI_TOOL_CALL_ARGUMENTS: '{"kind": "pods", "namespace": "prod"}'},
    )
    assert fields["tool_name"] == "kubectl_get"  # from the span name when the attribute is missing
    assert fields["args_hash"] == stable_hash(args)  # key order and whitespace do not matter
    assert "result_hash" not in fields


def test_mast_hints_override_what_content_suggests():
    fields = normalize(
        "execute_tool t",
        {
            A.GEN_AI_OPERATION_NAME: "execute_tool",
            A.GEN_AI_TOOL_NAME: "t",
            A.GEN_AI_TOOL_CALL_ARGUMENTS: "{}",
            A.MAST_TOOL_ARGS_HASH: "abc",
            A.MAST_TOOL_KIND: "verify",
            A.MAST_TOOL_VERIFICATION_PASSED: "false",
            A.MAST_STEP_INDEX: "3",
        },
    )
    assert (fields["args_hash"], fields["tool_kind"], fields["verification_passed"], fields["step_index"]) == ("abc", "verify", False, 3)


def test_agent_run_hints_task_and_final_answer():
    fields = normalize(
        "invoke_agent triage",
        {
            A.GEN_AI_OPERATION_NAME: "invoke_agent",
            A.GEN_AI_CONVERSATION_ID: "conv-1",
            A.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "system", "content": "rules"}, {"role": "user", "content": "fix prod"}]),
            A.GEN_AI_OUTPUT_MESSAGES: json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "draft"}]}]),
            A.MAST_RUN_FINAL_ANSWER: "restarted api",
            A.MAST_TASK_CONSTRAINTS: '["read_only", "no_delete"]',
            A.MAST_AGENT_ALLOWED_TOOLS: "kubectl_get, kubectl_logs",
            A.MAST_TASK_AMBIGUOUS: True,
            A.MAST_RUN_CLAIMED_SUCCESS: "true",
            A.MAST_RUN_OUTCOME: "great",
            A.MAST_RUN_SCORE: "0.75",
            A.MAST_RUN_TERMINATION_REASON: "max_steps",
        },
    )
    hints = fields["hints"]
    assert fields["agent_name"] == "triage" and fields["conversation_id"] == "conv-1"
    assert hints.task == "fix prod" and hints.final_answer == "restarted api" and fields["output_text"] == "draft"
    assert hints.constraints == ("read_only", "no_delete") and hints.allowed_tools == ("kubectl_get", "kubectl_logs")
    assert (hints.ambiguous, hints.claimed_success, hints.outcome, hints.score) == (True, True, "unknown", 0.75)
    assert hints.termination_reason == "max_steps"


def test_traceloop_agent_and_tool_spans():
    agent = normalize(
        "sre.agent",
        {"traceloop.span.kind": "agent", "traceloop.entity.name": "sre", "traceloop.entity.input": '{"args": ["fix prod"]}'},
    )
    tool = normalize("kubectl.tool", {"traceloop.span.kind": "tool", "traceloop.entity.output": "ok"})
    assert (agent["role"], agent["agent_name"], agent["convention"]) == (Role.AGENT, "sre", "openllmetry")
    assert agent["hints"].task == '{"args": ["fix prod"]}'
    assert (tool["role"], tool["tool_name"], tool["result_hash"]) == (Role.TOOL, "kubectl", stable_hash("ok"))


def test_content_is_capped():
    fields = normalize(
        "invoke_agent a", {A.GEN_AI_OPERATION_NAME: "invoke_agent", A.MAST_RUN_FINAL_ANSWER: "y" * 500}, content_chars=50
    )
    assert len(fields["hints"].final_answer) == 50


def test_odd_values_do_not_raise():
    fields = normalize(
        "chat x",
        {
            A.GEN_AI_OPERATION_NAME: "chat",
            A.GEN_AI_USAGE_INPUT_TOKENS: "lots",
            A.GEN_AI_INPUT_MESSAGES: "{not json",
            A.GEN_AI_OUTPUT_MESSAGES: json.dumps([1, None, {"parts": "nope", "tool_calls": [None, {"name": 5}]}, {"tool_calls": 3}]),
            A.GEN_AI_RESPONSE_FINISH_REASONS: 7,
            A.MAST_STEP_INDEX: [1],
        },
    )
    assert fields["input_tokens"] is None and fields["step_index"] is None
    assert fields["input_message_count"] == 1 and fields["requested_tools"] == ("5",)


def test_remembered_string_arrays_answer_only_the_same_items():
    """Arrays are remembered by their items; a number never takes a string's answer
    (``1 == 1.0 == True``), and the answer is the same whether remembered or not."""
    def requested(value):
        return normalize("chat m", {A.GEN_AI_OPERATION_NAME: "chat", A.MAST_LLM_REQUESTED_TOOLS: value})["requested_tools"]

    assert requested(["get_pods", "", "logs"]) == ("get_pods", "logs")
    assert requested(["get_pods", "", "logs"]) == ("get_pods", "logs")  # the remembered answer
    assert requested(["1"]) == ("1",) and requested([1]) == ("1",)
    assert requested([True]) == ("True",) and requested([1.0]) == ("1.0",)
    assert requested(["x" * 300]) == ("x" * 256,) and requested(["x" * 300]) == ("x" * 256,)
    assert requested([["nested"]]) == ("['nested']",)
    assert requested("a, b") == ("a", "b") and requested('["c"]') == ("c",)


def test_hints_already_typed_and_hints_needing_conversion_agree():
    as_typed = {A.MAST_STEP_INDEX: 3, A.MAST_TOOL_VERIFICATION_PASSED: False, A.MAST_TOOL_ARGS_HASH: "abc"}
    as_text = {A.MAST_STEP_INDEX: "3", A.MAST_TOOL_VERIFICATION_PASSED: "false", A.MAST_TOOL_ARGS_HASH: "abc"}
    fields = [normalize("execute_tool t", {A.GEN_AI_OPERATION_NAME: "execute_tool", **attrs}) for attrs in (as_typed, as_text)]
    for f in fields:
        assert (f["step_index"], f["verification_passed"], f["args_hash"]) == (3, False, "abc")
        assert type(f["step_index"]) is int and type(f["verification_passed"]) is bool
    bool_step = normalize("execute_tool t", {A.GEN_AI_OPERATION_NAME: "execute_tool", A.MAST_STEP_INDEX: True})
    assert bool_step["step_index"] == 1 and type(bool_step["step_index"]) is int


def test_vercel_ai_sdk_spans_by_operation_id():
    """``ai.*`` spans: the run, its model calls and tool calls, also in AI SDK 4's spellings (args, result, promptTokens)."""
    run = normalize("ai.generateText", {
        "ai.operationId": "ai.generateText", "ai.telemetry.functionId": "sre-agent", "ai.response.finishReason": "stop",
        "ai.prompt": json.dumps({"system": "rules", "messages": [{"role": "user", "content": [{"type": "text", "text": "fix prod"}]}]}),
        "ai.response.text": "restarted api"})
    assert (run["role"], run["agent_name"], run["finish_reasons"]) == (Role.AGENT, "sre-agent", ("stop",))
    assert (run["hints"].task, run["hints"].final_answer) == ("fix prod", "restarted api")

    call = normalize("ai.generateText.doGenerate", {
        "ai.operationId": "ai.generateText.doGenerate", "ai.model.id": "gpt-4o-mini", "ai.model.provider": "openai.chat",
        "gen_ai.request.model": "gpt-4o-mini", "ai.usage.promptTokens": 120, "ai.usage.completionTokens": "18",
        "ai.response.finishReason": "tool-calls", "ai.response.text": "",
        "ai.prompt.messages": json.dumps([
            {"role": "user", "content": "fix prod"},
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "get_pods", "args": {"ns": "a"}}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "get_pods", "result": {"pods": 3}}]}]),
        "ai.response.toolCalls": json.dumps([{"toolCallId": "c2", "toolName": "restart_pod", "args": '{"pod": "x"}'}])})
    assert (call["role"], call["convention"], call["model"], call["provider"]) == (Role.LLM, "ai_sdk", "gpt-4o-mini", "openai.chat")
    assert (call["input_tokens"], call["output_tokens"], call["finish_reasons"]) == (120, 18, ("tool-calls",))
    assert call["input_message_count"] == 3 and call["requested_tools"] == ("restart_pod",) and call["tools_offered"] is False
    assert call["tool_exchanges"]["c1"][2] == '{"pods":3}' and call["tool_exchanges"]["c2"][0] is not None

    tool = normalize("ai.toolCall", {"ai.operationId": "ai.toolCall", "ai.toolCall.name": "restart_pod", "ai.toolCall.id": "c2",
                                     "ai.toolCall.args": '{"pod": "x"}', "ai.toolCall.result": '{"status": "error"}'})
    assert (tool["role"], tool["tool_name"], tool["tool_call_id"], tool["error"]) == (Role.TOOL, "restart_pod", "c2", True)
    assert normalize("ai.embed", {"ai.operationId": "ai.embed", "ai.model.id": "text-embedding-3-small"}) is None


def test_an_agents_answer_is_what_it_said_and_mastra_keeps_it_apart():
    """AI SDK 7's invoke_agent output carries the turn's tool results beside the answer; Mastra's
    run keeps its request and answer in mastra.agent_run.* instead of GenAI messages."""
    results_only = json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "c1", "name": "get_logs", "arguments": {}},
        {"type": "tool_call_response", "id": "c1", "response": {"lines": ["connection refused"]}}]}])
    fields = normalize("invoke_agent gpt-4o-mini", {A.GEN_AI_OPERATION_NAME: "invoke_agent", A.GEN_AI_OUTPUT_MESSAGES: results_only})
    assert fields["hints"].final_answer is None
    mastra = normalize("invoke_agent sre-agent", {A.GEN_AI_OPERATION_NAME: "invoke_agent", A.GEN_AI_AGENT_NAME: "sre-agent",
                                                 "mastra.agent_run.input": "fix prod",
                                                 "mastra.agent_run.output": json.dumps({"text": "restarted api", "files": []})})
    assert (mastra["hints"].task, mastra["hints"].final_answer) == ("fix prod", "restarted api")
    stopped = normalize("invoke_agent sre-agent", {A.GEN_AI_OPERATION_NAME: "invoke_agent", "mastra.agent_run.output": '{"text": ""}'})
    assert stopped["hints"].final_answer is None
