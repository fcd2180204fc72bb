"""OpenInference's flattened messages read in one pass (``openinference.messages``) come out as
grouping every message's keys again would give them (the reading it replaced, kept here)."""

from __future__ import annotations

from typing import Any, Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.processors.ingest.normalize.common import Message, as_name, as_text, indexed
from mast_otel.processors.ingest.normalize.openinference import messages


def regrouped(attrs: Mapping[str, Any], prefix: str) -> list[Message]:
    """Each message's parts and tool calls grouped from its keys, for every message."""
    result = []
    for group in indexed(attrs, prefix):
        content = group.get("message.content")
        text = as_text(content) if content is not None else "\n".join(
            as_text(part.get("message_content.text")) or ""
            for part in indexed(group, "message.contents.")
            if part.get("message_content.text") is not None
        )
        tools = tuple(name for call in indexed(group, "message.tool_calls.")
                      if (name := as_name(call.get("tool_call.function.name"))))
        result.append(Message(str(group.get("message.role") or ""), text or "", tools))
    return result


_INDEX = st.sampled_from(["0", "1", "2", "10", "01", "x", ""])
_REST = st.sampled_from([
    "message.role", "message.content", "message.contents.0.message_content.text", "message.contents.1.message_content.text",
    "message.contents.x.message_content.text", "message.contents.0.message_content.type",
    "message.tool_calls.0.tool_call.function.name", "message.tool_calls.1.tool_call.function.name",
    "message.tool_calls.0.tool_call.id", "message.tool_calls", "message.contents", "message.name", "",
])
_VALUE = st.one_of(st.none(), st.text(max_size=8), st.integers(), st.lists(st.text(max_size=4), max_size=2))
_KEY = st.one_of(
    st.tuples(st.sampled_from(["llm.input_messages.", "llm.output_messages.", "llm.input_messages"]), _INDEX, _REST).map(
        lambda parts: parts[0] + parts[1] + ("." + parts[2] if parts[2] else "")),
    st.sampled_from(["llm.model_name", "input.value", "llm.input_messages.0"]),
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_KEY, _VALUE, max_size=14))
def test_one_pass_reads_the_messages_as_regrouping_does(attrs):
    for prefix in ("llm.input_messages.", "llm.output_messages."):
        assert messages(attrs, prefix) == regrouped(attrs, prefix)


def test_a_message_with_parts_and_tool_calls_is_read_whole():
    attrs = {
        "llm.input_messages.1.message.role": "assistant",
        "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "search",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.contents.0.message_content.text": "look",
        "llm.input_messages.0.message.contents.1.message_content.text": "here",
    }
    assert messages(attrs, "llm.input_messages.") == [Message("user", "look\nhere"), Message("assistant", "", ("search",))]
