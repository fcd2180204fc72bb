"""Spans written by the real third-party instrumentation libraries, decoded and normalized.

Each library runs for real: litellm with ``mock_response``/``mock_tool_calls``, the
``openai`` client against a local OpenAI-compatible HTTP server. The SDK's in-memory exporter
collects the spans, the OTLP encoder serializes them, and our decoder reads them back, from
protobuf and from OTLP/JSON.
"""

from __future__ import annotations

import os
import time

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.ingest.decode import decode_json, decode_protobuf
from mast_otel.processors.model import Role, Run, Span

from .chat_server import ChatServer, text_reply, tool_reply
from .otlp import capture, otlp_json_of, protobuf_of

MESSAGES = [{"role": "system", "content": "You triage Kubernetes incidents."}, {"role": "user", "content": "why is prod down?"}]
TOOLS = [{"type": "function", "function": {"name": "kubectl_get", "parameters": {"type": "object", "properties": {}}}}]


def decoded(finished) -> list[Span]:
    """Spans via protobuf, checked equal to the same spans via OTLP/JSON."""
    result = decode_protobuf(protobuf_of(finished))
    assert result.rejected == {}
    assert decode_json(otlp_json_of(finished)).spans == result.spans
    return result.spans


def only(spans: list[Span], role: Role) -> list[Span]:
    return [s for s in spans if s.role is role]


@pytest.fixture
def openinference_provider():
    from openinference.instrumentation import TracerProvider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "sre-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_openinference_agent_with_litellm_calls(openinference_provider):
    import litellm
    from openinference.instrumentation.litellm import LiteLLMInstrumentor

    provider, exporter = openinference_provider
    tracer = provider.get_tracer("sre")

    @tracer.tool
    def kubectl_get(namespace: str) -> str:
        """List pods."""
        return "api-1 CrashLoopBackOff"

    @tracer.agent(name="sre-agent")
    def triage(question: str) -> str:
        litellm.completion(
            model="gpt-4o-mini",
            messages=[*MESSAGES[:1], {"role": "user", "content": question}],
            mock_tool_calls=[{"id": "c1", "type": "function", "function": {"name": "kubectl_get", "arguments": '{"namespace": "prod"}'}}],
        )
        kubectl_get("prod")
        litellm.completion(model="gpt-4o-mini", messages=[{"role": "user", "content": question}], mock_response="api-1 is crashing")
        return "api-1 is crashing"

    instrumentor = LiteLLMInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        triage("why is prod down?")
    finally:
        instrumentor.uninstrument()

    spans = decoded(exporter.get_finished_spans())
    (agent,) = only(spans, Role.AGENT)
    assert agent.convention == "openinference" and agent.agent_name == "sre-agent"
    assert agent.hints.task == "why is prod down?" and agent.hints.final_answer == "api-1 is crashing"
    assert agent.service_name == "sre-agent"

    first, second = sorted(only(spans, Role.LLM), key=lambda s: s.start_ns)
    assert (first.model, first.provider, first.input_tokens, first.output_tokens) == ("gpt-4o-mini", "openai", 10, 20)
    assert first.requested_tools == ("kubectl_get",)
    assert first.input_message_count == 2 and "user: why is prod down?" in first.input_text
    assert second.requested_tools == () and second.output_text == "assistant: api-1 is crashing"
    assert second.finish_reasons == ("stop",)

    (tool,) = only(spans, Role.TOOL)
    assert tool.tool_name == "kubectl_get"
    assert tool.args_hash == stable_hash({"namespace": "prod"})  # not the tool.parameters schema
    assert tool.result_hash == stable_hash("api-1 CrashLoopBackOff")
    assert tool.tool_result == "api-1 CrashLoopBackOff"

    run = Run.from_spans(agent.trace_id, [s for s in spans if s.is_agent_related])
    assert run.root is agent and run.model == "gpt-4o-mini" and len(run.steps) == 3


def _chat_twice(client) -> None:
    messages = list(MESSAGES)
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    messages.append(reply.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": "call_0", "content": "api-1 CrashLoopBackOff"})
    messages.append({"role": "tool", "tool_call_id": "call_1", "content": "OOMKilled"})
    client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)


def _run_openai(instrumentor) -> list[Span]:
    import openai

    provider, exporter = capture()
    instrumentor.instrument(tracer_provider=provider)
    try:
        replies = [tool_reply(("kubectl_get", {"ns": "prod"}), ("kubectl_logs", {"pod": "api-1"})), text_reply("OOM in api-1")]
        with ChatServer(replies) as server:
            _chat_twice(openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0))
    finally:
        instrumentor.uninstrument()
    return sorted(decoded(exporter.get_finished_spans()), key=lambda s: s.start_ns)


def _openinference_openai():
    from openinference.instrumentation.openai import OpenAIInstrumentor

    return OpenAIInstrumentor()


def _openllmetry_openai():
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    return OpenAIInstrumentor()


@pytest.mark.parametrize(
    "instrumentor, convention, first_finish",
    [(_openinference_openai, "openinference", "tool_calls"), (_openllmetry_openai, "gen_ai", "tool_call")],
)
def test_openai_client_instrumentations(instrumentor, convention, first_finish):
    first, second = _run_openai(instrumentor())
    for span in (first, second):
        assert span.role is Role.LLM and span.convention == convention
        assert (span.model, span.request_model, span.provider) == ("gpt-4o-mini-2024-07-18", "gpt-4o-mini", "openai")
        assert (span.input_tokens, span.output_tokens) == (42, 7)
    assert first.requested_tools == ("kubectl_get", "kubectl_logs") and first.finish_reasons == (first_finish,)
    assert first.input_message_count == 2 and "user: why is prod down?" in first.input_text
    assert second.input_message_count == 5 and second.requested_tools == ()
    assert second.output_text == "assistant: OOM in api-1" and second.finish_reasons == ("stop",)


def test_openllmetry_openai_client_content_off(monkeypatch):
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "false")
    first, second = _run_openai(_openllmetry_openai())
    assert first.model == "gpt-4o-mini-2024-07-18" and first.input_tokens == 42
    assert first.input_text is None and first.output_text is None and first.input_message_count is None
    assert first.finish_reasons == ("tool_call",)


def test_litellm_own_otel_callback():
    import litellm
    from litellm.integrations.opentelemetry import OpenTelemetry, OpenTelemetryConfig

    provider, exporter = capture("litellm-app")
    callback = OpenTelemetry(config=OpenTelemetryConfig(exporter=exporter, skip_set_global=True), tracer_provider=provider)
    saved = litellm.callbacks
    litellm.callbacks = [callback]
    try:
        litellm.completion(model="gpt-4o-mini", messages=MESSAGES, mock_response="api-1 is crashing")
        litellm.completion(
            model="gpt-4o-mini",
            messages=MESSAGES,
            mock_tool_calls=[{"id": "c1", "type": "function", "function": {"name": "kubectl_get", "arguments": "{}"}}],
        )
        deadline = time.monotonic() + 20  # litellm logs from a worker thread
        while len(exporter.get_finished_spans()) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        litellm.callbacks = saved
        # litellm copies callbacks into its per-event lists at call time; leave none behind, or
        # it keeps writing onto whatever span is current in later tests.
        for name in ("success_callback", "failure_callback", "_async_success_callback", "_async_failure_callback"):
            setattr(litellm, name, [c for c in getattr(litellm, name) if c is not callback])

    spans = decoded(exporter.get_finished_spans())
    calls = sorted(only(spans, Role.LLM), key=lambda s: s.start_ns)
    assert len(calls) == 2  # the raw_gen_ai_request children pass through as OTHER
    assert {s.name for s in only(spans, Role.OTHER)} == {"raw_gen_ai_request"}
    for span in calls:
        assert span.convention == "litellm"
        assert (span.model, span.provider, span.input_tokens, span.output_tokens) == ("gpt-4o-mini", "openai", 10, 20)
        assert span.input_message_count == 2 and span.finish_reasons == ("stop",)
    assert calls[0].requested_tools == () and calls[0].output_text == "assistant: api-1 is crashing"
    assert calls[1].requested_tools == ("kubectl_get",)
