"""Sessions built the way a real agent's spans arrive: one trace per turn, written with the OTel SDK in
the GenAI conventions, encoded as OTLP protobuf, decoded and normalized, and hints derived, as the
processor does before it groups turns into a session."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from mast_otel.processors.conversations.ids import session_id_of
from mast_otel.processors.conversations.model import Turn
from mast_otel.processors.hints import derive_hints
from mast_otel.processors.ingest.decode import decode_protobuf
from mast_otel.processors.model import Run
from mast_otel.wire.hashing import stable_hash

from tests.ingest.otlp import capture, protobuf_of

SYSTEM = "You are an SRE assistant. Use the tools; answer briefly."


@dataclass
class ToolCall:
    name: str
    args: dict
    result: str
    kind: str | None = None  # mast.tool.kind; None: inferred from the name
    passed: bool | None = None  # mast.tool.verification.passed
    hashed: bool = False  # mast.tool.args_hash / result_hash, as mast-otel's instrumentation writes them with content off


@dataclass
class TurnSpec:
    """One user turn: the messages its first model call holds, the tools it calls, its answer."""

    messages: list[tuple[str, str]]  # (role, text) of the first model call's input
    answer: str
    tools: list[ToolCall] = field(default_factory=list)
    input_tokens: int | None = None  # of the first model call
    answer_tokens: int | None = None
    root: dict = field(default_factory=dict)  # more attributes on the turn's agent span (mast.run.*)
    router: bool = False  # a router agent first, whose model call sees only the system prompt and the new message


def conversation(user_turns: list[str], answers: list[str], *, carried: bool = True) -> list[TurnSpec]:
    """Turns whose first model call holds the system prompt, then the earlier turns when ``carried``, then the new message."""
    specs, history = [], []
    for user, answer in zip(user_turns, answers):
        messages = [("system", SYSTEM), *(history if carried else []), ("user", user)]
        specs.append(TurnSpec(messages, answer))
        history += [("user", user), ("assistant", answer)]
    return specs


def session(specs: list[TurnSpec], *, session_id: str = "conv-1", content: bool = True) -> list[Turn]:
    """The turns of one session, each its own trace, through encode, decode, normalize and hint derivation."""
    turns = []
    for spec in specs:
        run = _turn_run(spec, session_id, content)
        sid = session_id_of(run)
        assert sid == session_id
        turns.append(Turn(sid, run))
    return turns


def _parts(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _turn_run(spec: TurnSpec, session_id: str, content: bool) -> Run:
    provider, exporter = capture("chat-agent")
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span("invoke_agent sre", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "sre", "gen_ai.conversation.id": session_id, **spec.root}):
        if spec.router:
            with tracer.start_as_current_span("invoke_agent router", attributes={
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "router"}):
                routed = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                          "gen_ai.usage.input_tokens": 40 + len(spec.messages[-1][1]) // 4}
                if content:
                    routed["gen_ai.input.messages"] = json.dumps([_parts("system", "Route the request."),
                                                                  _parts(*spec.messages[-1])])
                with tracer.start_as_current_span("chat gpt-4o-mini", attributes=routed):
                    pass
        first = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}
        if spec.input_tokens is not None:
            first["gen_ai.usage.input_tokens"] = spec.input_tokens
        if content:
            first["gen_ai.input.messages"] = json.dumps([_parts(r, t) for r, t in spec.messages])
            first["gen_ai.output.messages"] = json.dumps([
                {"role": "assistant", "parts": [{"type": "tool_call", "id": f"c{i}", "name": t.name, "arguments": t.args}
                                                for i, t in enumerate(spec.tools)]}] if spec.tools else
                [_parts("assistant", spec.answer)])
        if not spec.tools and spec.answer_tokens is not None:
            first["gen_ai.usage.output_tokens"] = spec.answer_tokens
        with tracer.start_as_current_span("chat gpt-4o-mini", attributes=first):
            pass
        for i, tool in enumerate(spec.tools):
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool.name, "gen_ai.tool.call.id": f"c{i}"}
            if content:
                attrs["gen_ai.tool.call.arguments"] = json.dumps(tool.args)
                attrs["gen_ai.tool.call.result"] = tool.result
            if tool.hashed:
                attrs["mast.tool.args_hash"] = stable_hash(tool.args)
                attrs["mast.tool.result_hash"] = stable_hash(tool.result)
            if tool.kind:
                attrs["mast.tool.kind"] = tool.kind
            if tool.passed is not None:
                attrs["mast.tool.verification.passed"] = tool.passed
            with tracer.start_as_current_span(f"execute_tool {tool.name}", attributes=attrs):
                pass
        if spec.tools:
            last = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini"}
            if content:
                last["gen_ai.output.messages"] = json.dumps([_parts("assistant", spec.answer)])
            if spec.answer_tokens is not None:
                last["gen_ai.usage.output_tokens"] = spec.answer_tokens
            with tracer.start_as_current_span("chat gpt-4o-mini", attributes=last):
                pass
    result = decode_protobuf(protobuf_of(exporter.get_finished_spans()))
    assert result.rejected == {}
    (trace_id,) = {s.trace_id for s in result.spans}
    return derive_hints(Run.from_spans(trace_id, result.spans, completion="root_ended"))
