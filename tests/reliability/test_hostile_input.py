"""Hostile input, in process: the decoders, assembly and the detectors never crash, hang or
allocate without bound, and each bad span is rejected alone.

Generated requests are *shaped* like OTLP (so they reach normalization and detection, not just
the wire parser) and carry the project's own attribute names with wrong types, out-of-range
numbers, deep nesting, invalid UTF-8, bad ids, skewed clocks, parents that never arrive and
cycles in parent links.
"""

from __future__ import annotations

import json
import tracemalloc
from collections import defaultdict

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span as ProtoSpan

from mast_otel.wire import attributes as A
from mast_otel.processors.config import AssemblyConfig
from mast_otel.processors.detectors import LiveDetection, diagnose
from mast_otel.processors.ingest import decode as D
from mast_otel.processors.ingest.decode import DecodeError, decode_json, decode_protobuf
from mast_otel.processors.ingest.transcripts import StepListError, runs_from_steplist
from mast_otel.processors.model import Role, Run, Span
from mast_otel.processors.service.pipeline.assembler import Assembler

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BAD_UTF8_MARK = "@@BAD-UTF8@@"  # replaced by invalid UTF-8 bytes of the same length after encoding
NOW_NS = 1_760_000_000 * 10**9

# --- strategies ------------------------------------------------------------------------------
KEYS = st.sampled_from([v for k, v in vars(A).items() if k.isupper() and isinstance(v, str) and "." in v]) | st.text(max_size=12)
SCALARS = st.one_of(
    st.builds(lambda v: AnyValue(string_value=v), st.text(max_size=40) | st.sampled_from(["chat", "invoke_agent", "execute_tool", "verify", BAD_UTF8_MARK, "-1", "1e309"])),
    st.builds(lambda v: AnyValue(int_value=v), st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda v: AnyValue(double_value=v), st.floats(allow_nan=True, allow_infinity=True)),
    st.builds(lambda v: AnyValue(bool_value=v), st.booleans()),
    st.builds(lambda v: AnyValue(bytes_value=v), st.binary(max_size=16)),
    st.just(AnyValue()),
)


def _array(items):
    value = AnyValue()
    value.array_value.values.extend(items)
    return value


def _kvlist(pairs):
    value = AnyValue()
    value.kvlist_value.values.extend(KeyValue(key=k, value=v) for k, v in pairs)
    return value


VALUES = st.recursive(
    SCALARS,
    lambda inner: st.builds(_array, st.lists(inner, max_size=3)) | st.builds(_kvlist, st.lists(st.tuples(KEYS, inner), max_size=3)),
    max_leaves=12,
)
IDS16 = st.sampled_from([bytes.fromhex("0af7651916cd43dd8448eb211c80319c"), bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")]) | st.binary(max_size=20)
IDS8 = st.sampled_from([bytes([i]) * 8 for i in range(1, 6)]) | st.binary(max_size=10)
TIMES = st.sampled_from([NOW_NS, NOW_NS + 10**9, NOW_NS - 86_400 * 10**9, 4_102_444_799 * 10**9, 0]) | st.integers(0, 2**64 - 1)
OPERATIONS = st.sampled_from([A.OP_INVOKE_AGENT, A.OP_CHAT, A.OP_EXECUTE_TOOL, "embeddings", "x"])


@st.composite
def proto_spans(draw):
    attributes = [KeyValue(key=k, value=v) for k, v in draw(st.lists(st.tuples(KEYS, VALUES), max_size=8))]
    attributes.insert(0, KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value=draw(OPERATIONS))))
    start = draw(TIMES)
    return ProtoSpan(
        trace_id=draw(IDS16), span_id=draw(IDS8), parent_span_id=draw(st.just(b"") | IDS8),
        name=draw(st.text(max_size=30) | st.just(BAD_UTF8_MARK)), start_time_unix_nano=start,
        end_time_unix_nano=draw(st.just(start) | TIMES), attributes=attributes,
    )


@st.composite
def requests(draw) -> tuple[ExportTraceServiceRequest, int]:
    request = ExportTraceServiceRequest()
    count = 0
    for _ in range(draw(st.integers(1, 3))):
        rs = ResourceSpans()
        rs.resource.attributes.add(key="service.name", value=draw(SCALARS))
        spans = draw(st.lists(proto_spans(), max_size=6))
        count += len(spans)
        rs.scope_spans.append(ScopeSpans(spans=spans))
        request.resource_spans.append(rs)
    return request, count


def with_bad_utf8(body: bytes) -> bytes:
    return body.replace(BAD_UTF8_MARK.encode(), b"\xff\xfe" * (len(BAD_UTF8_MARK) // 2))


def as_otlp_json(request: ExportTraceServiceRequest) -> dict:
    """OTLP/JSON: hex ids (protobuf's generic mapping writes base64)."""
    doc = json_format.MessageToDict(request)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for sp in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in sp:
                        import base64

                        sp[key] = base64.b64decode(sp[key]).hex()
    return doc


# --- checks ----------------------------------------------------------------------------------
def exercise_downstream(spans: list[Span]) -> None:
    """Everything that reads decoded spans: assembly, run views, rule and live detection."""
    for span in spans:
        assert len(span.trace_id) == 32 and len(span.span_id) == 16 and span.start_ns <= span.end_ns
    by_trace: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    for trace_id, members in by_trace.items():
        live = LiveDetection()
        for span in members:
            live.observe(span)
        for completion in ("root_ended", "abandoned"):
            run = Run.from_spans(trace_id, members, completion=completion)
            for span in run.spans:
                run.agent_of(span)
            _ = (run.hints, run.model, run.agent, run.steps)
            diagnose(run)
    assembler = Assembler(AssemblyConfig(grace_seconds=0, idle_timeout_seconds=1, max_buffered_bytes=1 << 20), LiveDetection)
    assembler.add(spans, 0.0)
    assembler.due(10.0)
    assert not assembler.in_flight


def accounted(result, expected: int) -> None:
    assert len(result.spans) + result.rejected_count == expected
    assert result.wire == [] or len(result.wire) == len(result.spans)  # wire forms line up with the spans
    assert all(count > 0 for count in result.rejected.values())
    exercise_downstream(result.spans)


# --- decoders --------------------------------------------------------------------------------
@FUZZ
@given(requests(), st.booleans())
def test_fuzzed_otlp_protobuf_every_span_accounted(generated, keep_raw):
    request, count = generated
    body = with_bad_utf8(request.SerializeToString())
    accounted(decode_protobuf(body, D.DecodeOptions(keep_raw=keep_raw)), count)


def test_a_request_with_no_spans_and_a_broken_resource_is_empty_not_an_error():
    """Found by the fuzzer: nothing to lose, so nothing to refuse."""
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans()])])
    request.resource_spans[0].resource.attributes.append(
        KeyValue(key="service.name", value=AnyValue(string_value=BAD_UTF8_MARK)))
    result = decode_protobuf(with_bad_utf8(request.SerializeToString()))
    assert result.spans == [] and result.rejected == {}
    with pytest.raises(DecodeError):
        decode_protobuf(b"\x0a\xff\xff")  # not OTLP-shaped at all: still a 400


@FUZZ
@given(requests(), st.booleans())
def test_fuzzed_otlp_json_every_span_accounted(generated, keep_raw):
    request, count = generated
    body = with_bad_utf8(json.dumps(as_otlp_json(request)).encode())
    try:
        result = decode_json(body, D.DecodeOptions(keep_raw=keep_raw))
    except DecodeError:  # NaN/Infinity doubles written bare make the whole body invalid JSON
        assert b"NaN" in body or b"Infinity" in body
        return
    accounted(result, count)


@FUZZ
@given(st.lists(st.text(max_size=6) | st.sampled_from(["\\ud800", "\\udfff", '"', "\\", "{", "[", "\\u0000"]), max_size=20))
def test_lone_surrogates_and_broken_escapes_in_json(pieces):
    span = {"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "0102030405060708", "name": "n",
            "startTimeUnixNano": str(NOW_NS), "endTimeUnixNano": str(NOW_NS)}
    text = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span, {**span, "spanId": "0102030405060709", "name": "NAME"}]}]}]})
    body = text.replace("NAME", "".join(pieces)).encode()
    try:
        result = decode_json(body)
    except DecodeError:
        return
    accounted(result, 2)
    assert any(s.span_id == "0102030405060708" for s in result.spans)  # the clean neighbour survives


def _run_with_attributes(attributes: list[KeyValue], neighbour: bool = True) -> bytes:
    base = dict(trace_id=b"\x0a" * 16, parent_span_id=b"", start_time_unix_nano=NOW_NS, end_time_unix_nano=NOW_NS + 1)
    spans = [ProtoSpan(span_id=b"\x01" * 8, name="hostile", attributes=attributes, **base)]
    if neighbour:
        spans.append(ProtoSpan(span_id=b"\x02" * 8, name="invoke_agent ok", attributes=[
            KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value=A.OP_INVOKE_AGENT))], **base))
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])]).SerializeToString()


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field, written by hand."""
    size, length = len(payload), bytearray()
    while True:
        length.append((size & 0x7F) | (0x80 if size > 0x7F else 0))
        size >>= 7
        if not size:
            return bytes([number << 3 | 2]) + bytes(length) + payload


def _run_spans(body: bytes) -> list[bytes]:
    return [s.SerializeToString() for s in ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0].spans]


@pytest.mark.timeout(120)
def test_a_million_attributes_within_the_body_cap_reject_one_span_with_bounded_memory():
    attributes = [KeyValue(key=str(i), value=AnyValue(bool_value=True)) for i in range(1_000_000)]
    body = _run_with_attributes(attributes)
    del attributes
    assert len(body) < 16 * 1024 * 1024  # the service's default body cap
    tracemalloc.start()
    try:
        result = decode_protobuf(body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.rejected == {D.TOO_MANY_ATTRIBUTES: 1} and [s.span_id for s in result.spans] == ["02" * 8]
    # The parsed message costs a bounded multiple of the body, never more per attribute than that.
    assert peak < 40 * len(body)


def test_huge_strings_are_truncated_not_kept():
    huge = "x" * (8 * 1024 * 1024)
    body = _run_with_attributes([
        KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value=A.OP_CHAT)),
        KeyValue(key=A.GEN_AI_INPUT_MESSAGES, value=AnyValue(string_value=huge)),
        KeyValue(key=A.GEN_AI_REQUEST_MODEL, value=AnyValue(string_value=huge)),
    ])
    result = decode_protobuf(body)
    assert len(result.spans) == 2
    for span in result.spans:
        for value in (span.input_text, span.model, span.request_model, span.name):
            assert value is None or len(value) <= D.DecodeOptions().max_string_chars


@pytest.mark.timeout(60)
@pytest.mark.parametrize("depth", [9, 50, 99, 5000])
def test_deeply_nested_values_reject_only_their_span(depth):
    nested = AnyValue(string_value="leaf").SerializeToString()
    for _ in range(depth):  # written by hand: the protobuf runtime refuses to build deep messages
        nested = _field(5, _field(1, nested))  # AnyValue{array_value{values: [nested]}}
    hostile, neighbour = _run_spans(_run_with_attributes([]))
    hostile += _field(9, _field(1, A.MAST_TASK_CONSTRAINTS.encode()) + _field(2, nested))
    body = _field(1, _field(2, _field(2, hostile) + _field(2, neighbour)))  # request{resource_spans{scope_spans{spans}}}
    result = decode_protobuf(body)
    assert [s.span_id for s in result.spans] == ["02" * 8] and result.rejected_count == 1

    doc = {"arrayValue": {"values": [{"stringValue": "leaf"}]}}
    for _ in range(depth):
        doc = {"arrayValue": {"values": [doc]}}
    span = {"traceId": "0a" * 16, "name": "x", "startTimeUnixNano": NOW_NS, "endTimeUnixNano": NOW_NS}
    text = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {**span, "spanId": "01" * 8, "attributes": [{"key": "k", "value": "DEEP"}]}, {**span, "spanId": "02" * 8}]}]}]})
    body = text.replace('"DEEP"', json.dumps(doc) if depth < 900 else "[" * depth + "]" * depth).encode()
    try:
        result = decode_json(body)
    except DecodeError as exc:  # deeper than the JSON parser's recursion limit: the body is refused whole
        assert depth >= 900 and "JSON" in str(exc)
        return
    assert [s.span_id for s in result.spans] == ["02" * 8] and result.rejected_count == 1


def _deep_text(depth: int, shape: str) -> str:
    """JSON (or a Python literal) nested ``depth`` levels: small on the wire, deep once read."""
    if shape == "array":
        return "[" * depth + "]" * depth
    if shape == "object":
        return '{"a":' * depth + "1" + "}" * depth
    return "{'a': " * depth + "1" + "}" * depth


DEEP_CONTENT = {  # content attributes that normalize reads as JSON: tool values, messages, inputs
    "genai tool": lambda text: {A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL, A.GEN_AI_TOOL_NAME: "kubectl",
                                "gen_ai.tool.call.arguments": text, "gen_ai.tool.call.result": text},
    "openinference tool": lambda text: {"openinference.span.kind": "TOOL", "tool.name": "kubectl",
                                        "input.value": text, "output.value": text},
    "openinference model call": lambda text: {"openinference.span.kind": "LLM", "llm.model_name": "m",
                                              "llm.input_messages.0.message.role": "user",
                                              "llm.input_messages.0.message.content": text,
                                              "input.value": text, "output.value": text},
    "openllmetry tool": lambda text: {"traceloop.span.kind": "tool", "traceloop.entity.name": "kubectl",
                                      "traceloop.entity.input": text, "traceloop.entity.output": text},
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fast", [True, False], ids=["shortcuts", "plain"])
@pytest.mark.parametrize("shape", ["array", "object", "python"])
@pytest.mark.parametrize("convention", sorted(DEEP_CONTENT))
def test_deeply_nested_json_text_in_content_keeps_its_span_and_request(convention, shape, fast):
    """A content value is a string; deeply nested JSON inside it (a few kilobytes) once made
    ``json`` run out of stack while the tool value was hashed, and the whole request failed.
    Now the value gets no hash (as the instrumentation gives none for it) and every span is kept,
    at every depth from one the parser reads to far past the interpreter's recursion limit."""
    for depth in (200, 900, 950, 1000, 3000, 100_000):
        text = _deep_text(depth, shape)
        attributes = [KeyValue(key=k, value=AnyValue(string_value=v)) for k, v in DEEP_CONTENT[convention](text).items()]
        result = decode_protobuf(_run_with_attributes(attributes), D.DecodeOptions(fast=fast, content_chars=1 << 20))
        assert not result.rejected and len(result.spans) == 2, (depth, result.rejected, result.messages)
        exercise_downstream(result.spans)


# --- step-list import ------------------------------------------------------------------------
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=15,
)
STEP_KEYS = st.sampled_from(["agent", "kind", "content", "metadata", "tool", "tool_call_id", "tool_kind", "arguments", "error",
                             "verification_passed", "model", "requested_tools", "input_message_count", "role"])
STEP_VALUES = st.sampled_from(["message", "tool_call", "tool_result", "system", "user", "verify", "coder"]) | JSONISH
RUN_KEYS = st.sampled_from(["trace_id", "task", "final_answer", "success", "outcome", "score", "model", "agent", "max_steps",
                            "ambiguous", "constraints", "termination_reason", "claimed_success", "agents", "mast_annotation"])


@FUZZ
@given(st.lists(st.fixed_dictionaries({
    "steps": st.lists(st.dictionaries(STEP_KEYS, STEP_VALUES, max_size=6), max_size=12),
    "metadata": st.dictionaries(RUN_KEYS, JSONISH | st.integers(-5, 10**12), max_size=6) | JSONISH,
    "labels": JSONISH,
}), min_size=1, max_size=3))
def test_fuzzed_step_lists_give_runs_or_a_clear_error(records):
    try:
        runs = runs_from_steplist(records)
    except StepListError as exc:
        assert str(exc).startswith("record ")
        return
    assert len(runs) == len(records)
    for run in runs:
        exercise_downstream(run.spans)


# --- structure: cycles, missing parents, clock skew -----------------------------------------
def _span(span_id: str, parent: str | None, role: Role, start: int = NOW_NS, end: int = NOW_NS + 1, **fields) -> Span:
    return Span("ab" * 16, span_id, parent, f"{role.value} {span_id}", start, end, role=role, **fields)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("shape", ["self", "pair", "ring_of_agents", "ring_of_tools", "dangling"])
def test_parent_cycles_and_missing_parents_terminate(shape):
    ids = [f"{i:016x}" for i in range(1, 7)]
    if shape == "self":
        spans = [_span(i, i, Role.AGENT if n == 0 else Role.TOOL, tool_name="t") for n, i in enumerate(ids)]
    elif shape == "pair":
        spans = [_span(ids[0], ids[1], Role.AGENT), _span(ids[1], ids[0], Role.AGENT)] + [
            _span(i, ids[0], Role.LLM, model="m") for i in ids[2:]]
    elif shape == "ring_of_agents":
        spans = [_span(i, ids[(n + 1) % len(ids)], Role.AGENT, agent_name=f"a{n}") for n, i in enumerate(ids)]
    elif shape == "ring_of_tools":
        spans = [_span(i, ids[(n + 1) % len(ids)], Role.TOOL, tool_name="kubectl", args_hash="h") for n, i in enumerate(ids)]
    else:  # every parent is a span that never arrives
        spans = [_span(i, "f" * 16, Role.AGENT if n == 0 else Role.LLM, model="m") for n, i in enumerate(ids)]
    exercise_downstream(spans)
    run = Run.from_spans("ab" * 16, spans)
    assert len(run.spans) == len(spans)
    assert all(run.agent_of(s) is None or run.agent_of(s).role is Role.AGENT for s in spans)


@pytest.mark.parametrize("offset_s", [-20 * 365 * 86_400, -3_600, 0, 3_600, 70 * 365 * 86_400])
def test_clock_skew_is_diagnosed_like_any_run(offset_s):
    start = NOW_NS + offset_s * 10**9
    spans = [_span("01" * 8, None, Role.AGENT, start, start + 10**9, agent_name="a"),
             *(_span(f"{n:016x}", "01" * 8, Role.TOOL, start + n, start + n + 1, tool_name="t", args_hash="h") for n in range(2, 6))]
    exercise_downstream(spans)
    run = Run.from_spans("ab" * 16, spans, completion="root_ended")
    assert run.root is not None and run.root.span_id == "01" * 8
