"""GenAI content in events (span events, or log records read as events) normalizes like the same
content on span attributes, in every shape the official instrumentations emit.

The event shapes follow the instrumentations' sources: opentelemetry-instrumentation-openai-v2
on its legacy conventions (per-message events, ``tool_calls`` with ids and arguments, ``gen_ai.choice``
with the message inside), -vertexai (Gemini parts in ``content``, the choice's tool calls beside its
message), and opentelemetry-util-genai / Google ADK (``gen_ai.client.inference.operation.details``
with messages, system instructions and tool definitions as structured values).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from mast_otel.processors.ingest.log_records import record_event
from mast_otel.processors.ingest.normalize import normalize_into
from mast_otel.processors.ingest.normalize.events import OPERATION_DETAILS, Event, add_event_content
from mast_otel.processors.model import Role, Span

CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.system": "openai"}
# every field but where the content came from: what detectors read
COMPARED = [f.name for f in dataclasses.fields(Span) if f.name != "content_source"]


def normalized(attrs: dict[str, Any], events: list[Event] = (), name: str = "chat gpt-4o-mini") -> Span:  # type: ignore[assignment]
    span = Span("ab" * 16, "cd" * 8, None, name, 1, 2)
    normalize_into(span, name, attrs, events=events)
    return span


def fields(span: Span) -> dict[str, Any]:
    return {name: getattr(span, name) for name in COMPARED}


def call(call_id: str, tool: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}


def openai_v2_records(turns: list[tuple[str, str, str, str]], asked: tuple[str, str, str], user: str = "restart pod a") -> list[Event]:
    """A chat call's records as openai-v2 (legacy conventions) emits them: the body is a map, spread
    into the attributes. ``turns``: earlier (call id, tool, arguments, result); ``asked``: the call
    the model asks for now."""
    system = {"gen_ai.system": "openai"}
    events = [record_event("gen_ai.system.message", system, {"content": "You are an SRE agent."}),
              record_event("gen_ai.user.message", system, {"content": user})]
    for call_id, tool, arguments, result in turns:
        events.append(record_event("gen_ai.assistant.message", system, {"tool_calls": [call(call_id, tool, arguments)]}))
        events.append(record_event("gen_ai.tool.message", system, {"content": result, "id": call_id}))
    events.append(record_event("gen_ai.choice", system, {"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "tool_calls": [call(*asked)]}}))
    return events


def chat_format(turns: list[tuple[str, str, str, str]], asked: tuple[str, str, str], user: str = "restart pod a") -> dict[str, Any]:
    """The same call's content on the span, as OpenAI chat messages."""
    inputs: list[dict[str, Any]] = [{"role": "system", "content": "You are an SRE agent."}, {"role": "user", "content": user}]
    for call_id, tool, arguments, result in turns:
        inputs.append({"role": "assistant", "tool_calls": [call(call_id, tool, arguments)]})
        inputs.append({"role": "tool", "tool_call_id": call_id, "content": result})
    outputs = [{"role": "assistant", "tool_calls": [call(*asked)]}]
    return {"gen_ai.input.messages": json.dumps(inputs), "gen_ai.output.messages": json.dumps(outputs),
            "gen_ai.response.finish_reasons": ["tool_calls"]}


def as_span_events(events: list[Event]) -> list[Event]:
    """The same events as span events, whose attributes cannot hold maps: structured values as JSON text."""
    return [(name, {k: json.dumps(v) if isinstance(v, (dict, list)) else v for k, v in attrs.items()}) for name, attrs in events]


TURNS = [("call_1", "restart_pod", '{"pod": "a"}', "refused: quota exceeded")]
ASKED = ("call_2", "restart_pod", '{"pod": "a"}')


def test_per_message_records_keep_tool_calls_with_their_arguments_and_results():
    on_span = normalized({**CHAT, **chat_format(TURNS, ASKED)})
    for events in (openai_v2_records(TURNS, ASKED), as_span_events(openai_v2_records(TURNS, ASKED))):
        from_events = normalized(CHAT, events)
        assert fields(from_events) == fields(on_span)
        assert from_events.content_source == "events"
    assert on_span.requested_tools == ("restart_pod",)
    exchanges = on_span.tool_exchanges
    assert exchanges is not None and exchanges["call_1"][0] == exchanges["call_2"][0] is not None  # the same arguments
    assert exchanges["call_1"][2] == "refused: quota exceeded"
    assert on_span.finish_reasons == ("tool_calls",)


def test_agent_framework_message_records_with_structured_arguments_and_results():
    """Microsoft Agent Framework's per-message records: the assistant's text beside its tool calls,
    arguments and tool results as structured values, a system message per instruction."""
    system = {"gen_ai.system": "openai"}
    arguments, result = {"pod": "a"}, {"status": "refused", "reason": "quota"}
    events = [record_event("gen_ai.system.message", system, {"content": "You are an SRE agent."}),
              record_event("gen_ai.user.message", system, {"content": "restart pod a"}),
              record_event("gen_ai.assistant.message", system, {"content": "Restarting.", "tool_calls": [
                  {"id": "c1", "type": "function", "function": {"name": "restart_pod", "arguments": arguments}}]}),
              record_event("gen_ai.tool.message", system, {"id": "c1", "content": result}),
              record_event("gen_ai.choice", system, {"index": 0, "finish_reason": "stop", "message": {"content": "It was refused."}})]
    inputs = [{"role": "system", "content": "You are an SRE agent."}, {"role": "user", "content": "restart pod a"},
              {"role": "assistant", "content": "Restarting.", "tool_calls": [
                  {"id": "c1", "type": "function", "function": {"name": "restart_pod", "arguments": arguments}}]},
              {"role": "tool", "tool_call_id": "c1", "content": result}]
    on_span = normalized({**CHAT, "gen_ai.input.messages": json.dumps(inputs), "gen_ai.response.finish_reasons": ["stop"],
                          "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": "It was refused."}])})
    from_events = normalized(CHAT, events)
    assert fields(from_events) == fields(on_span)
    assert from_events.tool_exchanges is not None and None not in from_events.tool_exchanges["c1"]


def test_vertexai_bodies_are_read_part_by_part_and_tool_calls_counted_once():
    """Gemini parts in ``content``; the choice repeats its function call in the message's parts and
    lists it beside the message: one requested call, with its arguments."""
    system = {"gen_ai.system": "vertex_ai"}
    events = [
        record_event("gen_ai.user.message", system, {"role": "user", "content": [{"text": "restart pod a"}]}),
        record_event("gen_ai.assistant.message", system, {"role": "model", "content": [
            {"function_call": {"name": "restart_pod", "args": {"pod": "a"}}}]}),
        record_event("gen_ai.tool.message", system, {"role": "user", "id": "restart_pod_0", "content": {"result": "refused"}}),
        record_event("gen_ai.choice", system, {"finish_reason": "stop", "index": 0, "message": {"role": "model", "content": [
            {"function_call": {"name": "restart_pod", "args": {"pod": "a"}}}]},
            "tool_calls": [{"id": "restart_pod_0", "type": "function", "function": {"name": "restart_pod", "arguments": {"pod": "a"}}}]}),
    ]
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gemini-2.5-flash", "gen_ai.system": "vertex_ai"}
    parts = {
        "gen_ai.input.messages": json.dumps([
            {"role": "user", "parts": [{"type": "text", "content": "restart pod a"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "name": "restart_pod", "arguments": {"pod": "a"}}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "restart_pod_0", "response": {"result": "refused"}}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "tool_call", "id": "restart_pod_0", "name": "restart_pod", "arguments": {"pod": "a"}}], "finish_reason": "stop"}]),
        "gen_ai.response.finish_reasons": ["stop"],
    }
    from_events = normalized(attrs, events, "chat gemini-2.5-flash")
    assert fields(from_events) == fields(normalized({**attrs, **parts}, name="chat gemini-2.5-flash"))
    assert from_events.requested_tools == ("restart_pod",)
    assert from_events.tool_exchanges is not None and set(from_events.tool_exchanges["restart_pod_0"][:2]) != {None}


def operation_details(tools: bool = True) -> dict[str, Any]:
    """util-genai's (and ADK's) operation details as a log record carries them: structured values."""
    content: dict[str, Any] = {
        "gen_ai.input.messages": [
            {"role": "user", "parts": [{"type": "text", "content": "restart pod a"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "restart_pod", "arguments": {"pod": "a"}}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "refused"}]}],
        "gen_ai.output.messages": [{"role": "assistant", "finish_reason": "tool_call", "parts": [
            {"type": "tool_call", "id": "c2", "name": "restart_pod", "arguments": {"pod": "a"}}]}],
        "gen_ai.system_instructions": [{"type": "text", "content": "You are an SRE agent."}],
    }
    if tools:
        content["gen_ai.tool.definitions"] = [{"type": "function", "name": "restart_pod", "description": "Restart a pod",
                                               "parameters": {"type": "object", "properties": {"pod": {"type": "string"}}}}]
    return content


def test_operation_details_structured_values_and_tool_definitions():
    content = operation_details()
    on_span = normalized({**CHAT, **{k: json.dumps(v) for k, v in content.items()}})
    from_events = normalized(CHAT, [(OPERATION_DETAILS, {**CHAT, **content})])
    assert fields(from_events) == fields(on_span)
    assert from_events.tools_offered is True  # offered tools read from the definitions in the event
    assert normalized(CHAT, [(OPERATION_DETAILS, {**CHAT, **operation_details(tools=False)})]).tools_offered is False
    assert from_events.tool_exchanges is not None and from_events.tool_exchanges["c1"][0] == from_events.tool_exchanges["c2"][0]


def test_events_on_a_tool_span_are_its_arguments_and_result():
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "restart_pod"}
    span = normalized(tool, [("gen_ai.tool.message", {"content": '{"pod": "a"}'}),
                             ("gen_ai.choice", {"message": json.dumps({"content": "refused"}), "finish_reason": "stop"})],
                      "execute_tool restart_pod")
    on_span = normalized({**tool, "gen_ai.tool.call.arguments": '{"pod": "a"}', "gen_ai.tool.call.result": "refused"},
                         name="execute_tool restart_pod")
    assert (span.tool_args, span.args_hash, span.result_hash) == (on_span.tool_args, on_span.args_hash, on_span.result_hash)
    assert span.args_hash is not None and span.tool_result == "refused"


def test_attributes_on_the_span_win_over_events():
    span = normalized({**CHAT, **chat_format(TURNS, ASKED, user="from the span")}, openai_v2_records([], ASKED, user="from events"))
    assert span.input_text is not None and "from the span" in span.input_text and "from events" not in span.input_text


# --- events that arrive after their span ------------------------------------------------------

def test_add_event_content_fills_only_what_the_span_lacks_and_says_where_it_came_from():
    span = normalized(CHAT)
    assert span.role is Role.LLM and span.input_text is None
    assert add_event_content(span, openai_v2_records(TURNS, ASKED), 8192) is True
    assert span.content_source == "logs" and span.tool_exchanges is not None and span.requested_tools == ("restart_pod",)
    before = fields(span)
    assert add_event_content(span, openai_v2_records([], ("call_9", "other", "{}"), user="later"), 8192) is False
    assert fields(span) == before  # nothing the span had was replaced

    assert add_event_content(normalized(CHAT), [("gen_ai.other", {"x": 1})], 8192) is False
    other = Span("ab" * 16, "ef" * 8, None, "GET /", 1, 2)
    assert add_event_content(other, openai_v2_records(TURNS, ASKED), 8192) is False and other.content_source is None


def test_add_event_content_on_a_tool_span_reads_a_failure_returned_as_a_value():
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "restart_pod"}
    span = normalized(tool, name="execute_tool restart_pod")
    added = add_event_content(span, [(OPERATION_DETAILS, {"gen_ai.tool.call.arguments": {"pod": "a"},
                                                           "gen_ai.tool.call.result": {"status": "error", "error": "quota"}})], 8192)
    on_span = normalized({**tool, "gen_ai.tool.call.arguments": {"pod": "a"},
                          "gen_ai.tool.call.result": {"status": "error", "error": "quota"}}, name="execute_tool restart_pod")
    assert added and fields(span) == fields(on_span) and span.error


# --- property: wherever the content went, the same span ---------------------------------------

TOOLS = st.sampled_from(["restart_pod", "get_logs", "scale"])
ARGS = st.dictionaries(st.sampled_from(["pod", "ns", "replicas"]), st.one_of(st.text(max_size=8), st.integers(0, 9)), max_size=2)
TEXT = st.text(min_size=1, max_size=20)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(TOOLS, ARGS, TEXT), max_size=4), st.tuples(TOOLS, ARGS), TEXT, st.booleans(), st.booleans())
def test_content_on_attributes_in_events_or_added_later_normalizes_alike(turns, asked, user, tools, structured):
    """For util-genai's parts format (operation details) and openai-v2's chat format (per-message
    events): content on the span's attributes, the same content in events at decode, and the same
    events added to the span normalized without them give the same fields."""
    turns_ = [(f"call_{i}", tool, json.dumps(args), result) for i, (tool, args, result) in enumerate(turns)]
    asked_ = (f"call_{len(turns)}", asked[0], json.dumps(asked[1]))
    shapes = [(chat_format(turns_, asked_, user), openai_v2_records(turns_, asked_, user))]
    inputs = [{"role": "user", "parts": [{"type": "text", "content": user}]}]
    for call_id, tool, args, result in turns_:
        inputs.append({"role": "assistant", "parts": [{"type": "tool_call", "id": call_id, "name": tool, "arguments": json.loads(args)}]})
        inputs.append({"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": result}]})
    content: dict[str, Any] = {"gen_ai.input.messages": inputs, "gen_ai.output.messages": [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": asked_[0], "name": asked_[1], "arguments": json.loads(asked_[2])}]}]}
    if tools:
        content["gen_ai.tool.definitions"] = [{"type": "function", "name": t} for t in ("restart_pod", "get_logs")]
    event_content = content if structured else {k: json.dumps(v) for k, v in content.items()}
    shapes.append(({k: json.dumps(v) for k, v in content.items()}, [(OPERATION_DETAILS, event_content)]))
    for on_attributes, events in shapes:
        expected = fields(normalized({**CHAT, **on_attributes}))
        assert fields(normalized(CHAT, events)) == expected
        later = normalized(CHAT)
        assert add_event_content(later, events, 8192)
        assert fields(later) == expected


def test_a_details_record_without_content_lends_nothing_to_say():
    """ADK sends the operation details with content off too (tool names, no messages): the call
    stays one without content, and nothing is said to have come from events."""
    names_only = {**CHAT, "gen_ai.tool.definitions": [{"type": "function", "name": "restart_pod", "parameters": None}]}
    span = normalized(CHAT, [(OPERATION_DETAILS, names_only)])
    assert span.content_source is None and span.tools_offered is None and span.input_text is None
    later = normalized(CHAT)
    assert add_event_content(later, [(OPERATION_DETAILS, names_only)], 8192) is False and fields(later) == fields(span)


def test_records_handed_to_the_decode_say_they_came_from_logs():
    span = Span("ab" * 16, "cd" * 8, None, "chat gpt-4o-mini", 1, 2)
    normalize_into(span, "chat gpt-4o-mini", CHAT, events=openai_v2_records(TURNS, ASKED), event_source="logs")
    assert span.content_source == "logs" and fields(span) == fields(normalized(CHAT, openai_v2_records(TURNS, ASKED)))


# --- a span that is no call and no agent: its events are not read -----------------------------

_ROLE_KEYS = st.sampled_from(["gen_ai.operation.name", "llm.request.type", "gen_ai.request.model", "gen_ai.response.model",
                              "gen_ai.tool.name", "gen_ai.agent.name", "gen_ai.system", "gen_ai.provider.name"])
_ROLE_VALUES = st.sampled_from(["chat", "execute_tool", "invoke_agent", "execute_event_loop_cycle", "embeddings",
                                "completion", "m", 1])


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_ROLE_KEYS, _ROLE_VALUES, max_size=3), st.booleans())
def test_what_events_lend_never_gives_a_span_its_role(attrs, details):
    """The role comes from the span's own attributes (operation, model, tool, agent), never from
    content events lend: so a GenAI span without a role is left out before its events are read,
    and one with a role gets the same role either way."""
    from mast_otel.processors.ingest.normalize import genai
    from mast_otel.processors.ingest.normalize.events import with_event_content

    events = [(OPERATION_DETAILS, {"gen_ai.input.messages": "[]", "gen_ai.output.messages": "[]",
                                   "gen_ai.tool.call.arguments": "{}", "gen_ai.response.finish_reasons": ["stop"]})] \
        if details else openai_v2_records(TURNS, ASKED)
    assert genai.role_of("span", with_event_content(attrs, events)) is genai.role_of("span", attrs)


def test_the_events_of_an_event_loop_cycle_are_not_read(monkeypatch):
    from mast_otel.processors.ingest import normalize

    def refuse(*_: Any) -> Any:
        raise AssertionError("events read for a span that is no call")

    monkeypatch.setattr(normalize, "with_event_content", refuse)
    cycle = {"gen_ai.operation.name": "execute_event_loop_cycle", "gen_ai.system": "strands-agents"}
    span = normalized(cycle, openai_v2_records(TURNS, ASKED), name="execute_event_loop_cycle")
    assert span.role is Role.OTHER and span.input_text is None


@pytest.mark.parametrize("text", ["null", "42", "true", '"x"', "[1]", "{}", '{"a": 2}', '[{"a": 1}]', "[]"])
def test_message_text_that_reads_as_json_stays_the_message_text(text):
    """A user's words or a tool's result that happen to be JSON (found by the property test above:
    a user message ``null`` vanished) read as they do on the span's attributes: only a list of
    content blocks written as JSON is read back into blocks."""
    turns = [("call_1", "restart_pod", '{"pod": "a"}', text)]
    expected = fields(normalized({**CHAT, **chat_format(turns, ASKED, user=text)}))
    for events in (openai_v2_records(turns, ASKED, user=text), as_span_events(openai_v2_records(turns, ASKED, user=text))):
        assert fields(normalized(CHAT, events)) == expected
        later = normalized(CHAT)
        assert add_event_content(later, events, 8192)
        assert fields(later) == expected


def test_content_blocks_written_as_json_are_still_read_as_blocks():
    blocks = json.dumps([{"type": "text", "text": "restart pod a"}, {"functionCall": {"name": "restart_pod", "args": {"pod": "a"}}}])
    span = normalized(CHAT, [record_event("gen_ai.user.message", {"gen_ai.system": "gemini"}, {"content": blocks})])
    assert span.input_text is not None and "restart pod a" in span.input_text and "functionCall" not in span.input_text
