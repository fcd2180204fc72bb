"""The protobuf decoder's fast paths agree with the general ones (and with OTLP/JSON).

Flat arrays are read inline, with the same caps and depth limit as nested values; parent ids
are converted once per request, so siblings share one string.
"""

from __future__ import annotations

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue

from mast_otel.wire import attributes as A
from mast_otel.processors.ingest import decode as D
from mast_otel.processors.ingest.decode import DecodeOptions

from .test_decode import both, request, span


def _strings(*items: str) -> AnyValue:
    return AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=s) for s in items]))


def test_inline_arrays_keep_the_caps_of_nested_values():
    mixed = AnyValue(array_value=ArrayValue(values=[
        AnyValue(string_value="abcdef"), AnyValue(int_value=7), _strings("xyz123"), AnyValue(string_value="dropped"),
    ]))  # fmt: skip
    (llm,) = both(request(span(attributes=[
        KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value="chat")),
        KeyValue(key=A.GEN_AI_RESPONSE_FINISH_REASONS, value=_strings("tool_calls", "stop", "length", "more")),
        KeyValue(key=A.MAST_LLM_REQUESTED_TOOLS, value=mixed),
    ])), DecodeOptions(max_array_items=3, max_string_chars=4)).spans  # fmt: skip
    assert llm.finish_reasons == ("tool", "stop", "leng")
    assert llm.requested_tools == ("abcd", "7", "['xyz1']")


def test_arrays_nested_too_deep_reject_the_span():
    deep = _strings("x")
    for _ in range(3):
        deep = AnyValue(array_value=ArrayValue(values=[deep]))
    result = both(request(span(attributes=[KeyValue(key="nested", value=deep)])), DecodeOptions(max_value_depth=3))
    assert result.spans == [] and result.rejected == {D.ATTRIBUTE_TOO_DEEP: 1}
    assert len(both(request(span(attributes=[KeyValue(key="nested", value=deep)])), DecodeOptions(max_value_depth=4)).spans) == 1


def test_siblings_share_one_parent_id_string():
    parent = b"\x0a" * 8
    children = [span(span_id=bytes([2, 0, 0, 0, 0, 0, 0, i + 1]), parent_span_id=parent) for i in range(2)]
    result = both(request(*children, span("invoke_agent sre", span_id=parent)))
    first, second, agent = result.spans
    assert first.parent_span_id == second.parent_span_id == agent.span_id == parent.hex()
    assert first.parent_span_id is second.parent_span_id
    assert first.span_id != second.span_id and agent.parent_span_id is None
