"""Real litellm calls (``mock_response`` and a local OpenAI-compatible server) become chat spans."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.trace import SpanKind, StatusCode

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip("litellm")

from mast_otel.instrumentation import agent_run, configure, instrument_litellm, tool, uninstrument_litellm  # noqa: E402
from mast_otel.wire import attributes as A  # noqa: E402

MESSAGES = [{"role": "system", "content": "You triage Kubernetes incidents."},
            {"role": "user", "content": "checkout pods crash-loop"}]
TOOL_CALL = {"id": "call_1", "type": "function",
             "function": {"name": "kubectl_logs", "arguments": json.dumps({"pod": "checkout-7f9"})}}


@pytest.fixture(autouse=True)
def hooked():
    instrument_litellm()
    yield
    uninstrument_litellm()


@tool(kind="read")
def kubectl_logs(pod: str) -> str:
    return f"{pod}: OOMKilled"


def _tool_call_response(model: str = "gpt-4o-mini") -> litellm.ModelResponse:
    return litellm.ModelResponse(
        model=model,
        choices=[{"index": 0, "finish_reason": "tool_calls",
                  "message": {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]}}],
        usage={"prompt_tokens": 42, "completion_tokens": 9, "total_tokens": 51},
    )


def test_completion_inside_a_run_is_a_chat_span(spans):
    with agent_run("triage", conversation_id="chat-1") as run:
        response = litellm.completion(model="gpt-4o-mini", messages=MESSAGES, mock_response="Look at the logs.",
                                      temperature=0.1, max_tokens=64)
    assert response.choices[0].message.content == "Look at the logs."
    agent = spans.one("invoke_agent triage")
    chat = spans.one("chat gpt-4o-mini")
    assert chat.kind is SpanKind.CLIENT
    assert spans.parent_of(chat) == agent.context.span_id
    assert agent.start_time <= chat.start_time <= chat.end_time <= agent.end_time
    a = chat.attributes
    assert a[A.GEN_AI_OPERATION_NAME] == "chat"
    assert a[A.GEN_AI_PROVIDER_NAME] == "openai"
    assert a[A.GEN_AI_REQUEST_MODEL] == "gpt-4o-mini"
    assert a[A.GEN_AI_RESPONSE_MODEL] == "gpt-4o-mini"
    assert a[A.GEN_AI_RESPONSE_ID] == response.id
    assert tuple(a[A.GEN_AI_RESPONSE_FINISH_REASONS]) == ("stop",)
    assert a[A.GEN_AI_USAGE_INPUT_TOKENS] == response.usage.prompt_tokens
    assert a[A.GEN_AI_USAGE_OUTPUT_TOKENS] == response.usage.completion_tokens
    assert a[A.GEN_AI_REQUEST_TEMPERATURE] == 0.1 and a[A.GEN_AI_REQUEST_MAX_TOKENS] == 64
    assert a[A.MAST_LLM_INPUT_MESSAGE_COUNT] == 2
    assert a[A.MAST_STEP_INDEX] == 0
    assert a[A.GEN_AI_CONVERSATION_ID] == run.conversation_id
    assert A.MAST_LLM_REQUESTED_TOOLS not in a
    assert A.GEN_AI_INPUT_MESSAGES not in a and A.GEN_AI_OUTPUT_MESSAGES not in a


def test_agent_loop_with_mocked_tool_calls_numbers_the_steps(spans):
    with agent_run("triage", max_steps=5) as run:
        first = litellm.completion(model="anthropic/claude-sonnet-4-5", messages=MESSAGES, mock_response="",
                                   mock_tool_calls=[TOOL_CALL])
        for call in first.choices[0].message.tool_calls:
            kubectl_logs(**json.loads(call.function.arguments))
        litellm.completion(model="anthropic/claude-sonnet-4-5", messages=MESSAGES, mock_response="OOM: raise the limit")
        run.set_final_answer("raise the memory limit")
    chats = sorted(spans.named("chat claude-sonnet-4-5"), key=lambda s: s.start_time)
    assert [c.attributes[A.MAST_STEP_INDEX] for c in chats] == [0, 1]
    assert tuple(chats[0].attributes[A.MAST_LLM_REQUESTED_TOOLS]) == ("kubectl_logs",)
    assert A.MAST_LLM_REQUESTED_TOOLS not in chats[1].attributes
    assert {c.attributes[A.GEN_AI_PROVIDER_NAME] for c in chats} == {"anthropic"}
    assert spans.one("execute_tool kubectl_logs").attributes[A.MAST_STEP_INDEX] == 0
    assert spans.one("invoke_agent triage").attributes[A.MAST_RUN_TERMINATION_REASON] == "final_answer"


def test_streaming_with_tool_calls(spans):
    with agent_run("triage"):
        stream = litellm.completion(model="gpt-4o-mini", messages=MESSAGES, mock_response=_tool_call_response(),
                                    stream=True)
        chunks = list(stream)
    assert chunks
    chat = spans.one("chat gpt-4o-mini")
    assert tuple(chat.attributes[A.MAST_LLM_REQUESTED_TOOLS]) == ("kubectl_logs",)
    assert tuple(chat.attributes[A.GEN_AI_RESPONSE_FINISH_REASONS]) == ("tool_calls",)
    assert chat.end_time <= spans.one("invoke_agent triage").end_time


def test_a_call_that_never_reports_is_written_when_its_run_ends(spans):
    configure(model_call_grace_seconds=0.05)
    try:
        with agent_run("triage"):
            stream = litellm.completion(model="gpt-4o-mini", messages=MESSAGES, mock_response="never read",
                                        stream=True)
            next(iter(stream))  # abandoned after the first chunk: litellm never reports the call
    finally:
        configure(model_call_grace_seconds=1.0)
    chat = spans.one("chat gpt-4o-mini")
    assert chat.attributes[A.MAST_STEP_INDEX] == 0 and A.GEN_AI_RESPONSE_ID not in chat.attributes
    assert chat.end_time <= spans.one("invoke_agent triage").end_time


def test_content_captured_in_the_semconv_message_shape(capture):
    history = MESSAGES + [
        {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "checkout-7f9: OOMKilled"},
    ]
    with agent_run("triage"):
        litellm.completion(model="gpt-4o-mini", messages=history, mock_response="Raise the memory limit.")
    chat = capture.one("chat gpt-4o-mini")
    sent = json.loads(chat.attributes[A.GEN_AI_INPUT_MESSAGES])
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[1]["parts"] == [{"type": "text", "content": "checkout pods crash-loop"}]
    assert sent[2]["parts"] == [{"type": "tool_call", "id": "call_1", "name": "kubectl_logs",
                                 "arguments": {"pod": "checkout-7f9"}}]
    assert sent[3]["parts"] == [{"type": "tool_call_response", "id": "call_1",
                                 "response": "checkout-7f9: OOMKilled"}]
    received = json.loads(chat.attributes[A.GEN_AI_OUTPUT_MESSAGES])
    assert received == [{"role": "assistant", "parts": [{"type": "text", "content": "Raise the memory limit."}],
                         "finish_reason": "stop"}]
    assert chat.attributes[A.MAST_LLM_INPUT_MESSAGE_COUNT] == 4


def test_failed_call_is_an_error_span_and_the_error_reaches_the_agent(spans):
    with pytest.raises(litellm.exceptions.InternalServerError) as raised:
        with agent_run("triage"):
            litellm.completion(model="gpt-4o-mini", messages=MESSAGES, mock_response=Exception("upstream 500"))
    chat = spans.one("chat gpt-4o-mini")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes[A.ERROR_TYPE] == "litellm.exceptions.InternalServerError"
    assert "upstream 500" in str(raised.value)
    assert spans.one("invoke_agent triage").attributes[A.MAST_RUN_TERMINATION_REASON] == "error"


def test_calls_outside_runs_make_no_span_and_unhooking_stops_spans(spans):
    litellm.completion(model="gpt-4o-mini", messages=MESSAGES, mock_response="hi")
    uninstrument_litellm()
    with agent_run("triage"):
        litellm.completion(model="gpt-4o-mini", messages=MESSAGES, mock_response="hi")
    assert [s.name for s in spans.wait_for(2, timeout=0.5)] == ["invoke_agent triage"]
    instrument_litellm()
    instrument_litellm()  # idempotent: still one span per call
    with agent_run("again"):
        litellm.completion(model="gpt-4o-mini", messages=MESSAGES, mock_response="hi")
    assert len(spans.named("chat gpt-4o-mini")) == 1


async def test_acompletion_and_async_streaming_in_concurrent_runs(spans):
    async def triage(name: str) -> None:
        async with agent_run(name) as run:
            await litellm.acompletion(model="gpt-4o-mini", messages=MESSAGES, mock_response="first",
                                      mock_tool_calls=[TOOL_CALL])
            stream = await litellm.acompletion(model="gpt-4o-mini", messages=MESSAGES,
                                               mock_response="second", stream=True)
            text = "".join([chunk.choices[0].delta.content or "" async for chunk in stream])
            assert text == "second"
            run.set_termination_reason("final_answer")

    await asyncio.gather(triage("alpha"), triage("beta"))
    for name in ("alpha", "beta"):
        agent = spans.one(f"invoke_agent {name}")
        chats = sorted((s for s in spans.named("chat gpt-4o-mini") if spans.parent_of(s) == agent.context.span_id),
                       key=lambda s: s.start_time)
        assert [c.attributes[A.MAST_STEP_INDEX] for c in chats] == [0, 1]
        assert tuple(chats[0].attributes[A.MAST_LLM_REQUESTED_TOOLS]) == ("kubectl_logs",)
        assert all(c.context.trace_id == agent.context.trace_id and c.end_time <= agent.end_time for c in chats)
        assert chats[1].attributes[A.GEN_AI_USAGE_OUTPUT_TOKENS] > 0


class _ChatServer(BaseHTTPRequestHandler):
    """A minimal OpenAI-compatible ``/v1/chat/completions`` endpoint."""

    requests: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append(body)
        reply = {
            "id": "chatcmpl-local-1", "object": "chat.completion", "created": 1_700_000_000,
            "model": "local-model-2025-01",
            "choices": [{"index": 0, "finish_reason": "tool_calls",
                         "message": {"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]}}],
            "usage": {"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def chat_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_real_http_call_to_a_local_openai_compatible_server(spans, chat_server):
    with agent_run("triage"):
        response = litellm.completion(model="openai/local-model", api_base=chat_server, api_key="sk-local",
                                      messages=MESSAGES)
    assert response.choices[0].message.tool_calls[0].function.name == "kubectl_logs"
    assert _ChatServer.requests[-1]["model"] == "local-model"
    chat = spans.one("chat local-model")
    a = chat.attributes
    assert a[A.GEN_AI_PROVIDER_NAME] == "openai"
    assert a[A.GEN_AI_RESPONSE_MODEL] == "local-model-2025-01"
    assert a[A.GEN_AI_RESPONSE_ID] == "chatcmpl-local-1"
    assert (a[A.GEN_AI_USAGE_INPUT_TOKENS], a[A.GEN_AI_USAGE_OUTPUT_TOKENS]) == (31, 12)
    assert tuple(a[A.MAST_LLM_REQUESTED_TOOLS]) == ("kubectl_logs",)
    assert "sk-local" not in json.dumps(dict(a), default=str)
