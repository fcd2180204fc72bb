"""The decoder's fast paths agree with its plain path (``DecodeOptions(fast=False)``).

Flat arrays are read inline, with the same caps and depth limit as nested values; parent ids
are converted once per request, so siblings share one string; span attributes parsed as
serialized ``KeyValue`` s (and remembered by their bytes) read as upb's own messages read them;
attribute kinds are predicted from the last value under a key; the span checks run as one
expression first. Each is compared with the plain path on generated bodies and on every
recorded corpus (protobuf and OTLP/JSON).
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace

from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from mast_otel.wire import attributes as A
from mast_otel.processors.ingest import decode as D
from mast_otel.processors.ingest.decode import DecodeOptions, decode_json, decode_protobuf
from mast_otel.processors.ingest.serialized_attributes import request_type

from tests.corpora import otlp_documents

from .otlp import otlp_json_of
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


# --- span attributes read from their serialized form -----------------------------------------

def general_path(body: bytes, options: DecodeOptions) -> D.DecodeResult:
    """The decoder without the serialized-attributes path (``keep_raw`` always takes the
    general one, with its own shortcuts); ``wire`` is dropped so results compare."""
    result = decode_protobuf(body, replace(options, keep_raw=True))
    result.wire = []
    return result


def plain_path(body: bytes, options: DecodeOptions) -> D.DecodeResult:
    """The decoder with no shortcut at all."""
    return decode_protobuf(body, replace(options, fast=False))


def assert_same_as_general_path(body: bytes, options: DecodeOptions) -> D.DecodeResult:
    """The fast path's result, checked against the general path's and the plain path's (each
    span's size in the memory account too, which ``Span`` equality leaves out)."""
    expected_results = (general_path(body, options), plain_path(body, options))
    for _ in range(2):  # the second time, attributes come from what the first one read (and kinds are predicted)
        result = decode_protobuf(body, options)
        for expected in expected_results:
            assert (result.spans, result.rejected, result.messages) == (expected.spans, expected.rejected, expected.messages)
            assert [s.wire_bytes for s in result.spans] == [s.wire_bytes for s in expected.spans]
    return result


def _kv_bytes(key: bytes, value: bytes) -> bytes:
    """A serialized KeyValue written by hand: key field, then the AnyValue field."""
    return _field(1, key) + _field(2, value)


def _field(number: int, payload: bytes) -> bytes:
    size, length = len(payload), b""
    while True:
        byte, size = size & 0x7F, size >> 7
        length += bytes([byte | (0x80 if size else 0)])
        if not size:
            return bytes([number << 3 | 2]) + length + payload


def _body(*attributes: bytes, name: str = "chat m") -> bytes:
    """One span whose attributes are the given serialized KeyValues, as an OTLP body."""
    holder = request_type()()
    proto = span(name, attributes=[])
    holder.resource_spans.add().scope_spans.add().spans.add().MergeFromString(proto.SerializeToString())
    holder.resource_spans[0].scope_spans[0].spans[0].attributes.extend(attributes)
    return holder.SerializeToString()


SCALARS = st.one_of(
    st.text(max_size=140).map(lambda s: AnyValue(string_value=s)),
    st.integers(-(2**63), 2**63 - 1).map(lambda i: AnyValue(int_value=i)),
    st.booleans().map(lambda b: AnyValue(bool_value=b)),
    st.floats(allow_nan=False).map(lambda f: AnyValue(double_value=f)),
    st.binary(max_size=40).map(lambda b: AnyValue(bytes_value=b)),
    st.just(AnyValue()),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5).map(lambda items: AnyValue(array_value=ArrayValue(values=items)))
    | st.lists(st.tuples(st.text(max_size=8), inner), max_size=3).map(
        lambda pairs: AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in pairs]))),
    max_leaves=12,
)
KEYS = st.sampled_from([A.GEN_AI_OPERATION_NAME, A.GEN_AI_REQUEST_MODEL, A.GEN_AI_TOOL_NAME, A.MAST_STEP_INDEX,
                        A.GEN_AI_RESPONSE_FINISH_REASONS, A.MAST_TOOL_KIND, "x", ""]) | st.text(max_size=10)
CAPS = st.builds(DecodeOptions, max_string_chars=st.sampled_from([3, 64, 256 * 1024]),
                 max_array_items=st.sampled_from([2, 1024]), max_value_depth=st.sampled_from([1, 8]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(KEYS, VALUES), max_size=8), st.sampled_from(["chat m", "execute_tool t", "invoke_agent a"]), CAPS)
def test_serialized_attributes_read_as_the_general_path_reads_them(attributes, name, options):
    operation = {"chat m": "chat", "execute_tool t": "execute_tool", "invoke_agent a": "invoke_agent"}[name]
    kvs = [KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value=operation))]
    kvs += [KeyValue(key=key, value=value) for key, value in attributes]
    assert_same_as_general_path(request(span(name, attributes=kvs)).SerializeToString(), options)


def test_remembered_attributes_still_get_each_decoders_caps():
    kvs = [KeyValue(key=A.GEN_AI_REQUEST_MODEL, value=AnyValue(string_value="gpt-4o-mini")),
           KeyValue(key=A.GEN_AI_RESPONSE_FINISH_REASONS, value=_strings("tool_calls", "stop", "length"))]
    body = request(span(attributes=[KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value="chat")), *kvs])).SerializeToString()
    (wide,) = assert_same_as_general_path(body, DecodeOptions()).spans
    (narrow,) = assert_same_as_general_path(body, DecodeOptions(max_string_chars=4, max_array_items=2)).spans
    assert (wide.request_model, wide.finish_reasons) == ("gpt-4o-mini", ("tool_calls", "stop", "length"))
    assert (narrow.request_model, narrow.finish_reasons) == ("gpt-", ("tool", "stop"))
    assert assert_same_as_general_path(body, DecodeOptions(max_value_depth=0)).rejected == {D.ATTRIBUTE_TOO_DEEP: 1}


def test_unusual_encodings_of_an_attribute_read_as_upb_reads_them():
    chat = _kv_bytes(A.GEN_AI_OPERATION_NAME.encode(), _field(1, b"chat"))
    model = _field(1, A.GEN_AI_REQUEST_MODEL.encode())
    cases = [
        _field(2, _field(1, b"gpt-4o")) + model,  # value before key
        model + _field(2, _field(1, b"gpt-4o")) + _field(2, _field(1, b"gpt-5")),  # the value twice: merged, last wins
        model + _field(2, _field(1, b"gpt-4o") + b"\x18\x07"),  # a string and an int: the int wins
        model + _field(2, b""),  # no value at all
        model + _field(2, _field(1, b"x" * 200)),  # lengths of two bytes
        _field(1, b"") + _field(2, _field(1, b"anonymous")),  # an empty key written out
        model + _field(2, _field(1, b"gpt-4o")) + _field(9, b"unknown field"),
    ]
    for kv in cases:
        result = assert_same_as_general_path(_body(chat, kv), DecodeOptions())
        assert len(result.spans) == 1


def test_a_string_attribute_whose_key_and_length_were_seen_reads_as_upb_reads_it():
    """A string attribute's key is found by its bytes up to the text; whatever follows the
    text (another field, or bytes that are not UTF-8) is still read as upb reads it."""
    chat = _kv_bytes(A.GEN_AI_OPERATION_NAME.encode(), _field(1, b"chat"))
    key = A.GEN_AI_REQUEST_MODEL.encode()
    models = []
    for kv in (
        _kv_bytes(key, _field(1, b"model-1")),  # its bytes up to the text are remembered
        _kv_bytes(key, _field(1, b"model-2")),  # the same key and length, another text
        _kv_bytes(key, _field(1, b"model-3")) + _field(9, b"x"),  # a field after the text
        _kv_bytes(key, _field(1, b"model-4")) + _field(2, _field(1, b"model-5")),  # the value twice: the last wins
    ):
        (llm,) = assert_same_as_general_path(_body(chat, kv), DecodeOptions()).spans
        models.append(llm.request_model)
    assert models == ["model-1", "model-2", "model-3", "model-5"]
    bad = assert_same_as_general_path(_body(chat, _kv_bytes(key, _field(1, b"model\xff7"))), DecodeOptions())
    assert bad.spans == [] and bad.rejected == {D.MALFORMED_SPAN: 1}


def test_invalid_utf8_in_an_attribute_rejects_the_span_as_the_general_path_does():
    chat = _kv_bytes(A.GEN_AI_OPERATION_NAME.encode(), _field(1, b"chat"))
    for kv in (_kv_bytes(b"bad\xff", _field(1, b"x")), _kv_bytes(b"ok", _field(1, b"bad\xed\xa0\x80")),
               _kv_bytes(b"ok", _field(5, _field(1, _field(1, b"\xc0\xaf"))))):
        result = assert_same_as_general_path(_body(chat, kv), DecodeOptions())
        assert result.spans == [] and result.rejected == {D.MALFORMED_SPAN: 1}


def test_attributes_nested_near_upbs_depth_limit_fail_as_on_the_general_path():
    outcomes = set()
    for levels in range(30, 35):  # around upb's limit (counted in messages, 3 per kvlist level)
        deep = _field(1, b"x")
        for _ in range(levels):
            deep = _field(6, _field(1, _field(1, b"k") + _field(2, deep)))  # AnyValue{kvlist_value: {values: [{k: deep}]}}
        result = assert_same_as_general_path(_body(_kv_bytes(b"nested", deep)), DecodeOptions(max_value_depth=200))
        assert result.rejected_count + len(result.spans) == 1
        outcomes.add(tuple(result.rejected))
    assert outcomes == {(), (D.MALFORMED_SPAN,)}  # both sides of the limit were tried


def test_values_that_never_repeat_are_read_every_time_and_not_kept():
    options = DecodeOptions(max_string_chars=1000)  # caps of its own: a remembered set no other test fills
    chat = KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value="chat"))
    for i in range(D._MAX_MISSES + 20):
        unique = KeyValue(key=A.GEN_AI_RESPONSE_ID, value=AnyValue(string_value=f"chatcmpl-{i}"))
        assert_same_as_general_path(request(span(attributes=[chat, unique])).SerializeToString(), options)
    known = D._remembered_for(options)
    kept = [pair for pair in known.values() if pair[0] == A.GEN_AI_RESPONSE_ID]
    assert len(kept) == D._MAX_MISSES  # the first ones (each came twice: every body is decoded twice), until the key showed it does not repeat
    assert any(pair == (A.GEN_AI_OPERATION_NAME, "chat") for pair in known.values())  # the repeating one stays


def test_values_that_come_once_are_not_kept_and_leave_the_ones_that_repeat_in_place():
    """An attribute is kept the second time it comes: ids that come once each, more of them
    than the memory holds, are read every time, not kept, and do not make it start over."""
    options = DecodeOptions(max_string_chars=1001)  # caps of its own: a remembered set no other test fills
    chat = KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value="chat"))
    model = KeyValue(key=A.GEN_AI_REQUEST_MODEL, value=AnyValue(string_value="gpt-4o"))
    plain = replace(options, fast=False)
    for i in range(D._MAX_REMEMBERED + 50):
        once = KeyValue(key=f"app.id.{i % 7}", value=AnyValue(string_value=f"id-{i}"))
        body = request(span(attributes=[chat, model, once])).SerializeToString()
        result = decode_protobuf(body, options)
        if i % 500 == 0:
            assert result.spans == plain_path(body, plain).spans
    known = D._remembered_for(options)
    assert not any(pair[0].startswith("app.id.") for pair in known.values())
    assert {pair for pair in known.values()} == {(A.GEN_AI_OPERATION_NAME, "chat"), (A.GEN_AI_REQUEST_MODEL, "gpt-4o")}


def test_a_kept_array_is_shared_by_the_spans_that_hold_it_and_left_as_read():
    """Kept arrays are one list for every span that holds them, so nothing that reads a
    span's attributes may change them: after spans of every role read them, they hold what
    the wire said, and a later span reads the same fields."""
    options = DecodeOptions(max_string_chars=999)  # caps of its own: a remembered set no other test fills
    arrays = {
        A.GEN_AI_RESPONSE_FINISH_REASONS: ["tool_calls", "stop"],
        A.MAST_LLM_REQUESTED_TOOLS: ["get_pods", "", "logs"],
        A.MAST_TASK_CONSTRAINTS: ["read_only"],
        A.MAST_AGENT_ALLOWED_TOOLS: ["get_pods", "logs"],
    }
    kvs = [KeyValue(key=key, value=_strings(*items)) for key, items in arrays.items()]
    body = request(*(span(name, span_id=bytes([1, 0, 0, 0, 0, 0, 0, i + 1]), attributes=[
        KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value=name.split()[0])), *kvs])
        for i, name in enumerate(("chat m", "execute_tool t", "invoke_agent a")))).SerializeToString()
    first = assert_same_as_general_path(body, options).spans
    kept = {pair[0]: pair[1] for pair in D._remembered_for(options).values() if pair[0] in arrays}
    assert kept == arrays
    assert decode_protobuf(body, options).spans == first
    assert first[0].requested_tools == ("get_pods", "logs") and first[2].hints.constraints == ("read_only",)


def test_a_long_value_is_read_once_per_request_and_shared_as_read(monkeypatch):
    """An attribute longer than the memory keeps (content, a long tool list) is read once per
    request: the spans that hold it share what was read, which nothing writes into, and the
    next request reads it afresh."""
    tools = [f"tool_{i}_" + "x" * 20 for i in range(20)]  # an array of more than 256 bytes
    text = "the same long message, " * 20
    kvs = [KeyValue(key=A.MAST_AGENT_ALLOWED_TOOLS, value=_strings(*tools)),
           KeyValue(key=A.MAST_LLM_REQUESTED_TOOLS, value=_strings(*tools)),
           KeyValue(key="gen_ai.prompt.0.content", value=AnyValue(string_value=text)),
           KeyValue(key="gen_ai.prompt.0.role", value=AnyValue(string_value="user"))]
    spans = [span(name, span_id=bytes([3, 0, 0, 0, 0, 0, 0, i + 1]), attributes=[
        KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value=name.split()[0])), *kvs])
        for i, name in enumerate(("invoke_agent a", "chat m", "execute_tool t", "chat m"))]
    body = request(*spans).SerializeToString()
    first = assert_same_as_general_path(body, DecodeOptions()).spans
    assert first[0].hints.allowed_tools == tuple(tools) and first[1].requested_tools == tuple(tools)
    assert text in first[1].input_text and first[1].input_text == first[3].input_text
    reads: list[bytes] = []
    long_text, parse = D._Remembered._long_text, D._Remembered._parse
    monkeypatch.setattr(D._Remembered, "_long_text", staticmethod(lambda raw, size: reads.append(raw) or long_text(raw, size)))
    monkeypatch.setattr(D._Remembered, "_parse", lambda self, raw: reads.append(raw) or parse(self, raw))
    assert decode_protobuf(request(spans[1]).SerializeToString(), DecodeOptions()).spans == [first[1]]
    in_one_span = len(reads)
    for _ in range(2):
        reads.clear()
        assert decode_protobuf(body, DecodeOptions()).spans == first
        assert len(reads) == in_one_span > 0  # four spans hold them: read as often as for one, in each request


# --- span status read from its serialized form -----------------------------------------------

STATUSES = st.builds(Status, code=st.sampled_from([0, 1, 2]) | st.integers(-(2**31), 2**31 - 1),
                     message=st.text(max_size=140))


@settings(max_examples=150, deadline=None)
@given(st.none() | STATUSES, CAPS)
def test_serialized_status_read_as_the_general_path_reads_it(status, options):
    proto = span("execute_tool t", attributes=[KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value="execute_tool"))])
    if status is not None:
        proto.status.CopyFrom(status)
    (decoded,) = assert_same_as_general_path(request(proto).SerializeToString(), options).spans
    assert decoded.error == (status is not None and status.code == 2)


def test_unusual_encodings_of_a_status_read_as_upb_reads_them():
    for raw in (
        _varint_field(3, 2) + _field(2, b"boom"),  # code before message
        _field(2, b"boom") + _varint_field(3, 2) + _varint_field(3, 0),  # the code twice: last wins
        _varint_field(3, 300),  # a code of two bytes
        _field(2, b"x" * 200) + _varint_field(3, 2),  # a message length of two bytes
        _field(2, b"boom") + _varint_field(3, 2) + _field(9, b"unknown field"),
        _field(2, b"bad \xed\xa0\x80"),  # invalid UTF-8: the span is rejected
    ):
        holder = request_type()()
        proto = span("execute_tool t", attributes=[])
        holder.resource_spans.add().scope_spans.add().spans.add().MergeFromString(proto.SerializeToString())
        target = holder.resource_spans[0].scope_spans[0].spans[0]
        target.status = raw
        target.attributes.append(_kv_bytes(A.GEN_AI_OPERATION_NAME.encode(), _field(1, b"execute_tool")))
        result = assert_same_as_general_path(holder.SerializeToString(), DecodeOptions())
        assert len(result.spans) + result.rejected_count == 1


def test_a_long_status_message_is_read_on_the_serialized_path():
    """An error's status message of 128 bytes or more (a traceback) has a length of two or more
    bytes: read from the bytes, as upb reads it, without sending the body down the general path."""
    for message in ("Traceback (most recent call last): " * 5, "é" * 70, "x" * 20_000):
        proto = span("execute_tool t", attributes=[KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value="execute_tool"))],
                     status=Status(code=2, message=message))
        body = request(proto).SerializeToString()
        (decoded,) = assert_same_as_general_path(body, DecodeOptions()).spans
        assert decoded.error and decoded.status_message == message[: DecodeOptions().max_name_chars]
        assert len(D._decode_serialized_attributes(body, DecodeOptions()).spans) == 1  # no _NotFast


def _varint_field(number: int, value: int) -> bytes:
    out = bytes([number << 3])
    while True:
        byte, value = value & 0x7F, value >> 7
        out += bytes([byte | (0x80 if value else 0)])
        if not value:
            return out


def test_an_unparsable_span_is_rejected_as_such_even_when_something_else_is_wrong_with_it():
    bad_attribute = _kv_bytes(b"ok", _field(1, b"bad\xed\xa0\x80"))
    bad_status = _field(2, b"bad\xed\xa0\x80")
    chat = _kv_bytes(A.GEN_AI_OPERATION_NAME.encode(), _field(1, b"chat"))
    cases = [  # (what else is wrong, span fields, options)
        ("its trace id", dict(trace_id=b"\x00" * 16), DecodeOptions()),
        ("one span too many", {}, DecodeOptions(max_spans=1)),
        ("too many attributes", {}, DecodeOptions(max_attributes=1)),
    ]
    for what, fields, options in cases:
        for attributes, status in (([chat, bad_attribute], b""), ([chat], bad_status)):
            holder = request_type()()
            spans = holder.resource_spans.add().scope_spans.add().spans
            count = 2 if what == "one span too many" else 1
            for i in range(count):
                last = i == count - 1  # the broken one: the span over the limit when there are two
                target = spans.add()
                target.MergeFromString(span("chat m", span_id=bytes([1] * 7 + [i + 1]), attributes=[], **fields).SerializeToString())
                target.attributes.extend(attributes if last else [chat])
                target.status = status if last else b""
            result = assert_same_as_general_path(holder.SerializeToString(), options)
            assert D.MALFORMED_SPAN in result.rejected, what


# --- each span's size, as received -------------------------------------------------------------

def _spans_of(body: bytes) -> list[bytes]:
    """Each span's serialized bytes, as the body holds them."""
    return [raw for number, resource_spans in D._fields(body) if number == 1
            for part, scope_spans in D._fields(resource_spans) if part == 2
            for inner, raw in D._fields(scope_spans) if inner == 2]


def test_each_span_is_sized_as_it_was_received_on_every_path():
    """``wire_bytes`` is the span's serialized size in the body, read from the body by every path
    (no re-serialization per span): with an empty status set, events, a link, lengths of two and
    three bytes, and a field sent twice (where a re-serialization would count it once)."""
    chat = KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value="chat"))
    spans = [
        span("chat m", span_id=b"\x01" * 8, status=Status()),  # an empty status, present
        span("chat m", span_id=b"\x02" * 8, attributes=[chat, KeyValue(key="big", value=AnyValue(string_value="x" * 20_000))],
             events=[{"name": "exception", "time_unix_nano": 1_700_000_000 * 10**9}], links=[{"trace_id": b"\x05" * 16, "span_id": b"\x06" * 8}]),
        span("execute_tool t", span_id=b"\x03" * 8, status=Status(code=2, message="boom")),
    ]
    body = request(*spans).SerializeToString()
    twice = _field(5, b"chat n")  # the name sent again: the last one counts, and both are received
    raw = spans[0].SerializeToString() + twice
    body += _field(1, _field(2, _field(2, raw)))  # one more ResourceSpans holding that span
    sent = [len(raw) for raw in _spans_of(body)]
    assert sent[:3] == [s.ByteSize() for s in spans]
    result = assert_same_as_general_path(body, DecodeOptions())
    assert [s.wire_bytes for s in result.spans] == sent
    assert len(D._decode_serialized_attributes(body, DecodeOptions()).spans) == 4  # no _NotFast
    broken = body + _field(1, _field(2, _field(2, span("bad \xff", span_id=b"\x04" * 8).SerializeToString()
                                                   .replace(b"bad \xc3\xbf", b"bad \xff\xff"))))
    salvaged = decode_protobuf(broken)  # one span is not UTF-8: the others are parsed one by one
    assert salvaged.rejected == {D.MALFORMED_SPAN: 1} and [s.wire_bytes for s in salvaged.spans] == sent


def test_a_body_the_size_walk_does_not_follow_is_sized_by_its_spans_alike():
    """A group (an old protobuf encoding, allowed in an unknown field) is not followed by the
    walk that sizes spans: the spans are sized by re-serializing them, the same on every path."""
    proto = span("chat m", status=Status())
    group = bytes([9 << 3 | 3]) + bytes([1 << 3]) + b"\x01" + bytes([9 << 3 | 4])  # field 9, a group holding one varint
    body = _field(1, _field(2, _field(2, proto.SerializeToString())) + group)
    assert D._span_sizes(body, ExportTraceServiceRequest.FromString(body)) is None
    result = assert_same_as_general_path(body, DecodeOptions())
    assert [s.wire_bytes for s in result.spans] == [proto.ByteSize()]


# --- span checks, events and whole bodies ----------------------------------------------------

IDS = st.sampled_from([b"", b"\x00" * 8, b"\x01" * 7, b"\x02" * 8, b"\x03" * 8])
TIMES = st.sampled_from([0, 1, D.DecodeOptions().min_time_ns + 5, 1_700_000_000 * 10**9, 1_700_000_001 * 10**9,
                         D.DecodeOptions().max_time_ns + 1])
EVENTS = st.lists(st.tuples(st.sampled_from(["exception", "gen_ai.user.message", "x"]),
                            st.lists(st.tuples(KEYS | st.sampled_from(["exception.type", "exception.message"]), VALUES),
                                     max_size=3)), max_size=3)
SPANS = st.builds(
    lambda trace, sid, parent, name, start, end, attributes, events, code: span(
        name, span_id=sid, trace_id=trace, parent_span_id=parent, start_time_unix_nano=start, end_time_unix_nano=end,
        attributes=[KeyValue(key=k, value=v) for k, v in attributes],
        events=[{"name": n, "time_unix_nano": 1_700_000_000 * 10**9,
                 "attributes": [KeyValue(key=k, value=v) for k, v in kvs]} for n, kvs in events],
        status=Status(code=code)),
    st.sampled_from([b"\xaa" * 16, b"\x00" * 16, b"\xbb" * 15]), IDS, IDS,
    st.sampled_from(["chat m", "execute_tool t", "invoke_agent a", "", "nul\x00name", "GET /x"]),
    TIMES, TIMES, st.lists(st.tuples(KEYS, VALUES), max_size=5), EVENTS, st.sampled_from([0, 2]),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SPANS, min_size=1, max_size=4), CAPS)
def test_generated_bodies_decode_alike_on_the_fast_and_the_plain_path(spans, options):
    """Valid and invalid spans (ids, names, times), attributes and events of any kind, as protobuf
    and as OTLP/JSON: the shortcuts change nothing, whatever the caps."""
    body = request(*spans)
    assert_same_as_general_path(body.SerializeToString(), options)
    text = otlp_json_of(body)
    fast, plain = decode_json(text, options), decode_json(text, replace(options, fast=False))
    assert (fast.spans, fast.rejected, fast.messages) == (plain.spans, plain.rejected, plain.messages)


def _protobuf_of(doc: dict) -> bytes:
    """An OTLP/JSON document as the protobuf body an exporter would have sent (ids as bytes)."""
    fixed = copy.deepcopy(doc)
    for rs in fixed.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            ss["spans"] = [{**D._with_base64_ids(sp), "links": [D._with_base64_ids(link) for link in sp.get("links", [])]}
                           for sp in ss.get("spans", [])]
    return json_format.ParseDict(fixed, ExportTraceServiceRequest(), ignore_unknown_fields=True).SerializeToString()


def test_every_recorded_corpus_decodes_alike_on_the_fast_and_the_plain_path():
    """Every recording of every corpus (real frameworks' own instrumentation, Python and TypeScript,
    single agents and teams), as protobuf and as OTLP/JSON, under the default caps and tight ones."""
    documents = otlp_documents()
    serialized = spans = 0
    for path, doc in documents:
        body, text = _protobuf_of(doc), json.dumps(doc)
        for options in (DecodeOptions(), DecodeOptions(max_string_chars=48, max_array_items=2, content_chars=64)):
            result = assert_same_as_general_path(body, options)
            fast, plain = decode_json(text, options), decode_json(text, replace(options, fast=False))
            assert (fast.spans, fast.rejected) == (plain.spans, plain.rejected), path
            assert fast.spans == result.spans, path  # and both wire formats agree
            spans += len(result.spans)
        try:
            D._decode_serialized_attributes(body, DecodeOptions())
            serialized += 1
        except D._NotFast:
            pass
    assert len(documents) > 700 and spans > 10_000
    assert serialized == len(documents)  # all took the serialized-attributes path (long status messages too)


def test_long_texts_read_from_their_bytes_as_upb_reads_them():
    """Content (texts of 126 bytes or more, lengths of two or more bytes) is read straight from
    its bytes in the canonical layout; every other layout goes to upb, with the same result."""
    chat = _kv_bytes(A.GEN_AI_OPERATION_NAME.encode(), _field(1, b"chat"))
    key = b"gen_ai.prompt.0.content"
    text = ("long content, é and 漢字 " * 40).encode()
    padded = bytes([0x0A, len(text) & 0x7F | 0x80, 0x80 | (len(text) >> 7), 0x00]) + text  # a varint one byte too long
    cases = [
        _kv_bytes(key, _field(1, text)),  # the canonical layout
        _kv_bytes(key, _field(1, text * 20)),  # three-byte lengths
        _field(1, key) + _field(2, padded),
        _kv_bytes(key, _field(1, text)) + _field(9, b"x"),  # a field after the text
        _kv_bytes(key, _field(1, text)) + _field(2, _field(1, text[:-1])),  # the value twice: the last wins
        _kv_bytes(key, _field(1, text) + b"\x18\x07"),  # a string and an int: the int wins
        _kv_bytes(b"k" * 127, _field(1, text)),  # the longest key of a one-byte length
        _kv_bytes(b"k" * 200, _field(1, text)),  # a key of a two-byte length
        _kv_bytes(key, _field(1, text[:150] + b"\x00" + text[150:])),  # a NUL: the span is rejected
        _kv_bytes(key, _field(1, text[:150] + b"\xff" + text[150:])),  # invalid UTF-8: the span is rejected
    ]
    for kv in cases:
        for options in (DecodeOptions(), DecodeOptions(max_string_chars=200)):
            assert_same_as_general_path(_body(chat, kv, name="chat m"), options)
    (llm,) = assert_same_as_general_path(_body(chat, _kv_bytes(key, _field(1, text))), DecodeOptions()).spans
    assert "漢字" in llm.input_text
