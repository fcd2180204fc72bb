"""A run's session id, read from every instrumentation's spelling through the real decode and normalize path."""

from __future__ import annotations

import pytest

from mast_otel.processors.conversations.ids import session_id_of
from mast_otel.processors.conversations.keys import session_id_in
from mast_otel.processors.ingest.decode import decode_json, decode_protobuf
from mast_otel.processors.model import Run

from tests.ingest.otlp import capture, otlp_json_of, protobuf_of

GENAI_AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "sre"}
GENAI_CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}
OI_AGENT = {"openinference.span.kind": "AGENT", "agent.name": "sre"}
OI_LLM = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini"}
TL_WORKFLOW = {"traceloop.span.kind": "workflow", "traceloop.entity.name": "chat"}
TL_CHAT = {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini", "llm.request.type": "chat"}
AI_RUN = {"ai.operationId": "ai.generateText", "ai.telemetry.functionId": "sre"}
AI_CALL = {"ai.operationId": "ai.generateText.doGenerate", "ai.model.id": "gpt-4o-mini"}
ADK_AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "sre"}
ADK_CALL = {"gen_ai.system": "gcp.vertex.agent", "gen_ai.request.model": "gemini-2.0-flash"}


def run_of(root: dict, child: dict) -> Run:
    """A root span and one child, through the SDK, OTLP protobuf (checked equal to OTLP/JSON) and the normalizers."""
    provider, exporter = capture()
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("root", attributes=root):
        with tracer.start_as_current_span("child", attributes=child):
            pass
    finished = exporter.get_finished_spans()
    result = decode_protobuf(protobuf_of(finished))
    assert result.rejected == {}
    assert decode_json(otlp_json_of(finished)).spans == result.spans
    (trace_id,) = {s.trace_id for s in result.spans}
    return Run.from_spans(trace_id, result.spans)


CASES = {
    # already read before sessions: the conventions' own keys
    "openinference session.id on every span": (OI_AGENT | {"session.id": "s-1"}, OI_LLM | {"session.id": "s-1"}),
    "genai conversation id on every span (pydantic-ai)": (GENAI_AGENT | {"gen_ai.conversation.id": "s-1"},
                                                          GENAI_CHAT | {"gen_ai.conversation.id": "s-1"}),
    "genai conversation id on the invoke_agent root only (contrib)": (GENAI_AGENT | {"gen_ai.conversation.id": "s-1"}, GENAI_CHAT),
    "openllmetry session_id association property": (TL_WORKFLOW | {"traceloop.association.properties.session_id": "s-1"}, TL_CHAT),
    # the spellings sessions added
    "openllmetry conversation_id association property on the model call": (
        TL_WORKFLOW, TL_CHAT | {"traceloop.association.properties.conversation_id": "s-1"}),
    "openllmetry set_conversation_id on a workflow": (TL_WORKFLOW | {"gen_ai.conversation.id": "s-1"}, TL_CHAT),
    "ai sdk telemetry metadata sessionId": (AI_RUN | {"ai.telemetry.metadata.sessionId": "s-1"},
                                            AI_CALL | {"ai.telemetry.metadata.sessionId": "s-1"}),
    "ai sdk telemetry metadata threadId": (AI_RUN | {"ai.telemetry.metadata.threadId": "s-1"}, AI_CALL),
    "langfuse attribute on genai spans": (GENAI_AGENT | {"langfuse.session.id": "s-1"}, GENAI_CHAT),
    "langfuse propagated session.id on genai spans": (GENAI_AGENT, GENAI_CHAT | {"session.id": "s-1"}),
    "google adk session id on its model call": (ADK_AGENT, ADK_CALL | {"gcp.vertex.agent.session_id": "s-1"}),
}


@pytest.mark.parametrize("root,child", CASES.values(), ids=list(CASES))
def test_session_id_read_from_each_instrumentation(root, child):
    run = run_of(root, child)
    assert run.root is not None
    assert session_id_of(run) == "s-1"


def test_no_id_anywhere_is_no_session():
    """Microsoft Agent Framework's local sessions: GenAI spans with no conversation id."""
    assert session_id_of(run_of(GENAI_AGENT, GENAI_CHAT)) is None


def test_the_root_id_wins_over_a_child_id():
    run = run_of(GENAI_AGENT | {"gen_ai.conversation.id": "root-id"}, GENAI_CHAT | {"langfuse.session.id": "child-id"})
    assert session_id_of(run) == "root-id"


def test_a_convention_own_key_comes_before_other_spellings():
    run = run_of(OI_AGENT | {"session.id": "oi", "langfuse.session.id": "lf"}, OI_LLM)
    assert session_id_of(run) == "oi"


def test_numeric_ids_are_text_and_empty_ones_are_skipped():
    assert session_id_in({"ai.telemetry.metadata.sessionId": 42}) == "42"
    assert session_id_in({"langfuse.session.id": "  ", "ai.telemetry.metadata.sessionId": "s-2"}) == "s-2"
    assert session_id_in({"session.id": ["a", "b"]}) is None
    assert session_id_in({"gen_ai.request.model": "m"}) is None


def test_an_id_on_a_span_no_convention_claims_is_not_read():
    """Only agent, model and tool spans are kept: an id on an application span alone is lost (see docs/sessions.md)."""
    run = run_of({"langfuse.session.id": "s-1"}, GENAI_CHAT)
    assert session_id_of(run) is None


def test_openinference_using_session_reaches_every_span():
    """OpenInference's own context manager, through its tracer: the documented way to set ``session.id``."""
    from openinference.instrumentation import TracerProvider, using_session
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")

    @tracer.tool
    def get_pods(namespace: str) -> str:
        """List pods."""
        return "checkout-1 Running"

    @tracer.agent(name="sre")
    def turn(question: str) -> str:
        return get_pods("shop")

    with using_session("s-oi"):
        turn("are the pods healthy?")
    result = decode_protobuf(protobuf_of(exporter.get_finished_spans()))
    run = Run.from_spans(result.spans[0].trace_id, result.spans)
    assert {s.conversation_id for s in run.spans} == {"s-oi"}
    assert session_id_of(run) == "s-oi"
