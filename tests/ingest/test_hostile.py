"""Hostile and random input: the decoder answers DecodeError or a result, never anything else."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList

from mast_otel.processors.ingest import decode as D
from mast_otel.processors.ingest.decode import DecodeError, DecodeOptions, decode_json, decode_protobuf

from .test_decode import request, span

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
VALID = request(*(span(span_id=bytes([7, 0, 0, 0, 0, 0, 0, i + 1])) for i in range(4))).SerializeToString()


def outcome(decode, body, options=None):
    try:
        result = decode(body, options)
    except DecodeError as exc:
        assert str(exc)
        return None
    assert all(isinstance(count, int) and count > 0 for count in result.rejected.values())
    return result


@SETTINGS
@given(st.binary(max_size=512))
def test_random_bytes_as_protobuf(body):
    outcome(decode_protobuf, body)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=6))
def test_corrupted_protobuf_never_yields_more_than_it_holds(edits):
    body = bytearray(VALID)
    for position, byte in edits:
        body[position] = byte
    result = outcome(decode_protobuf, bytes(body))
    if result is not None:
        assert len(result.spans) + result.rejected_count <= 4 + len(edits)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=30,
)
ANY_VALUE_KEYS = st.sampled_from(["stringValue", "intValue", "doubleValue", "boolValue", "bytesValue", "arrayValue", "kvlistValue", "x"])


@SETTINGS
@given(JSON_VALUES)
def test_random_json_documents(doc):
    outcome(decode_json, json.dumps(doc).encode())


@SETTINGS
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["traceId", "spanId", "parentSpanId", "name", "startTimeUnixNano", "endTimeUnixNano", "attributes", "status"]),
            JSON_VALUES | st.lists(st.fixed_dictionaries({"key": st.text(max_size=8), "value": st.dictionaries(ANY_VALUE_KEYS, JSON_VALUES, max_size=2)})),
        ),
        max_size=5,
    )
)
def test_random_otlp_shaped_json(spans):
    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]}
    result = outcome(decode_json, json.dumps(doc).encode(), DecodeOptions(keep_raw=True))
    assert result is not None and len(result.spans) + result.rejected_count == len(spans)


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field, written by hand (the SDK refuses to build these)."""
    length, size = b"", len(payload)
    while True:
        length += bytes([(size & 0x7F) | (0x80 if size > 0x7F else 0)])
        size >>= 7
        if not size:
            break
    return bytes([number << 3 | 2]) + length + payload


def test_deep_attribute_nesting_in_protobuf_rejects_the_span_only():
    value = AnyValue(string_value="leaf").SerializeToString()
    for _ in range(300):  # deeper than protobuf's own parse limit
        value = _field(6, _field(1, _field(1, b"k") + _field(2, value)))  # kvlist{values: [{key, value}]}
    deep = span(span_id=b"\x05" * 8).SerializeToString() + _field(9, _field(1, b"deep") + _field(2, value))
    good = span(span_id=b"\x06" * 8).SerializeToString()
    body = _field(1, _field(2, _field(2, deep) + _field(2, good)))  # request{resource_spans{scope_spans{spans}}}
    result = decode_protobuf(body)
    assert [s.span_id for s in result.spans] == ["06" * 8] and result.rejected == {D.MALFORMED_SPAN: 1}


def test_long_arrays_are_truncated():
    values = ArrayValue(values=[AnyValue(string_value="t") for _ in range(50_000)])
    body = request(span(attributes=[
        KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="chat")),
        KeyValue(key="mast.llm.requested_tools", value=AnyValue(array_value=values)),
    ])).SerializeToString()
    (llm,) = decode_protobuf(body, DecodeOptions(max_array_items=100)).spans
    assert len(llm.requested_tools) == 100


def test_many_tiny_spans_are_capped():
    body = ExportTraceServiceRequest.FromString(request(*(span(span_id=bytes([8, 0, 0, 0, 0, 0, i // 256, i % 256 + 1 if i % 256 < 255 else 1])) for i in range(600))).SerializeToString())
    result = decode_protobuf(body.SerializeToString(), DecodeOptions(max_spans=100))
    assert len(result.spans) == 100 and result.rejected == {D.TOO_MANY_SPANS: 500}


# Every attribute a normalizer reads, with values of any shape a decoder can produce.
KNOWN_KEYS = [
    "gen_ai.operation.name", "gen_ai.request.model", "gen_ai.response.model", "gen_ai.provider.name", "gen_ai.system",
    "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "gen_ai.response.finish_reasons", "gen_ai.input.messages",
    "gen_ai.output.messages", "gen_ai.prompt", "gen_ai.prompt.0.role", "gen_ai.prompt.0.content", "gen_ai.completion.0.role",
    "gen_ai.completion.0.tool_calls.0.name", "gen_ai.completion.0.function_call.name", "gen_ai.tool.name",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.agent.name", "gen_ai.conversation.id",
    "llm.request.type", "litellm.call_id", "openinference.span.kind", "llm.model_name", "llm.invocation_parameters",
    "llm.token_count.prompt", "llm.finish_reason", "llm.input_messages.0.message.role", "llm.input_messages.0.message.contents.0.message_content.text",
    "llm.output_messages.0.message.content", "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "input.value", "output.value", "tool.name", "agent.name", "session.id", "traceloop.span.kind", "traceloop.entity.name",
    "traceloop.entity.input", "mast.step.index", "mast.llm.requested_tools", "mast.tool.kind", "mast.tool.args_hash",
    "mast.tool.verification.passed", "mast.task.max_steps", "mast.task.constraints", "mast.agent.allowed_tools",
    "mast.run.outcome", "mast.run.score", "mast.run.final_answer", "mast.run.claimed_success",
]  # fmt: skip
ROLE_VALUES = st.sampled_from(["chat", "execute_tool", "invoke_agent", "LLM", "TOOL", "AGENT", "agent", "tool"])
ATTRIBUTE_VALUES = JSON_VALUES | st.binary(max_size=8) | ROLE_VALUES | JSON_VALUES.map(json.dumps)


@SETTINGS
@given(st.dictionaries(st.sampled_from(KNOWN_KEYS), ATTRIBUTE_VALUES, max_size=12), st.text(max_size=20))
def test_normalizers_take_any_attribute_values(attrs, name):
    from mast_otel.processors.ingest.normalize import normalize
    from mast_otel.processors.model import Span

    fields = normalize(name, attrs, 64)
    if fields is not None:
        Span("a" * 32, "b" * 16, None, name or "n", 1, 2, **fields)  # the fields fit the model
