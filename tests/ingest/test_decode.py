"""OTLP decoding: protobuf and JSON agree, bad spans are rejected alone, hostile values are bounded."""

from __future__ import annotations

import json

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.trace import Status, StatusCode

from mast_otel.wire import attributes as A
from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.ingest import decode as D
from mast_otel.processors.ingest.decode import DecodeError, DecodeOptions, decode_json, decode_protobuf, decode_request
from mast_otel.processors.model import Role

from .otlp import capture, hex_ids, otlp_json_of, request_of

NOW = 1_750_000_000 * 10**9


def agent_trace():
    """One small agent run written with the SDK in mast-otel's vocabulary."""
    provider, exporter = capture("sre-agent")
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span(
        "invoke_agent sre",
        attributes={A.GEN_AI_OPERATION_NAME: "invoke_agent", A.GEN_AI_AGENT_NAME: "sre", A.MAST_TASK_MAX_STEPS: 4},
    ):
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                A.GEN_AI_OPERATION_NAME: "chat",
                A.GEN_AI_REQUEST_MODEL: "gpt-4o",
                A.GEN_AI_USAGE_INPUT_TOKENS: 120,
                A.MAST_STEP_INDEX: 0,
                A.MAST_LLM_REQUESTED_TOOLS: ("kubectl_get",),
                A.GEN_AI_RESPONSE_FINISH_REASONS: ("tool_calls",),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool kubectl_get",
            attributes={A.GEN_AI_OPERATION_NAME: "execute_tool", A.GEN_AI_TOOL_NAME: "kubectl_get", A.MAST_TOOL_KIND: "read"},
        ) as span:
            span.record_exception(TimeoutError("kubectl timed out"))
            span.set_status(Status(StatusCode.ERROR, "timed out"))
        with tracer.start_as_current_span("GET /api/pods"):
            pass
    return exporter.get_finished_spans()


def span(name: str = "chat m", span_id: bytes = b"\x01" * 8, **overrides) -> ProtoSpan:
    fields = dict(
        trace_id=b"\xaa" * 16,
        span_id=span_id,
        name=name,
        start_time_unix_nano=NOW,
        end_time_unix_nano=NOW + 1000,
        attributes=[KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value="chat"))],
    )
    fields.update(overrides)
    return ProtoSpan(**fields)


def request(*spans: ProtoSpan) -> ExportTraceServiceRequest:
    resource = Resource(attributes=[KeyValue(key="service.name", value=AnyValue(string_value="svc"))])
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(spans=spans)])])


def both(req: ExportTraceServiceRequest, options: DecodeOptions | None = None):
    """Decode via protobuf and via OTLP/JSON; the two must agree."""
    from_protobuf = decode_protobuf(req.SerializeToString(), options)
    from_json = decode_json(otlp_json_of(req), options)
    assert from_json.spans == from_protobuf.spans
    assert from_json.rejected == from_protobuf.rejected
    return from_protobuf


def test_agent_trace_roles_and_fields():
    spans = {s.name: s for s in decode_protobuf(request_of(agent_trace()).SerializeToString()).spans}
    agent, llm, tool, other = (spans[n] for n in ("invoke_agent sre", "chat gpt-4o", "execute_tool kubectl_get", "GET /api/pods"))
    assert (agent.role, agent.agent_name, agent.hints.max_steps, agent.parent_span_id) == (Role.AGENT, "sre", 4, None)
    assert (llm.role, llm.model, llm.input_tokens, llm.step_index) == (Role.LLM, "gpt-4o", 120, 0)
    assert llm.requested_tools == ("kubectl_get",) and llm.finish_reasons == ("tool_calls",)
    assert (tool.role, tool.tool_name, tool.tool_kind) == (Role.TOOL, "kubectl_get", "read")
    assert (tool.error, tool.error_type, tool.status_message) == (True, "TimeoutError", "timed out")
    assert other.role is Role.OTHER and other.convention is None and other.model is None
    assert {s.service_name for s in spans.values()} == {"sre-agent"}
    assert len({id(s.trace_id) for s in spans.values()}) == 1  # interned: one string per trace
    assert all(s.parent_span_id == agent.span_id for s in (llm, tool, other))


@pytest.mark.parametrize("snake_case", [False, True])
@pytest.mark.parametrize("enum_names", [False, True])
def test_json_and_protobuf_give_the_same_spans(snake_case, enum_names):
    req = request_of(agent_trace())
    from_protobuf = decode_protobuf(req.SerializeToString())
    from_json = decode_json(otlp_json_of(req, snake_case=snake_case, enum_names=enum_names))
    assert len(from_json.spans) == 4 and from_json.spans == from_protobuf.spans


def test_json_accepts_base64_ids_and_numbers_for_int64():
    req = request_of(agent_trace())
    from google.protobuf import json_format

    doc = json_format.MessageToDict(req)  # generic protobuf JSON: ids in base64
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                sp["startTimeUnixNano"] = int(sp["startTimeUnixNano"])
    assert decode_json(json.dumps(doc)).spans == decode_protobuf(req.SerializeToString()).spans


def test_keep_raw_keeps_the_original_span_and_a_shared_origin():
    req = request_of(agent_trace())
    options = DecodeOptions(keep_raw=True)
    from_protobuf = decode_protobuf(req.SerializeToString(), options)
    from_json = decode_json(otlp_json_of(req), options)
    originals = {sp.span_id.hex(): sp for rs in req.resource_spans for ss in rs.scope_spans for sp in ss.spans}
    assert len(from_protobuf.wire) == len(from_protobuf.spans) and len(from_json.wire) == len(from_json.spans)
    for span, a, b in zip(from_protobuf.spans, from_protobuf.wire, from_json.wire):
        assert ProtoSpan.FromString(a.raw) == originals[span.span_id]
        assert a.raw == b.raw and a.origin == b.origin
    assert len({id(w.origin) for w in from_protobuf.wire}) == 1
    assert Resource.FromString(from_protobuf.wire[0].origin.resource) == req.resource_spans[0].resource
    assert decode_protobuf(req.SerializeToString()).wire == []  # off by default
    assert not hasattr(from_protobuf.spans[0], "raw")  # the data model holds no wire bytes


def test_structured_attribute_values():
    messages = AnyValue(
        array_value=ArrayValue(
            values=[
                AnyValue(kvlist_value=KeyValueList(values=[
                    KeyValue(key="role", value=AnyValue(string_value=role)),
                    KeyValue(key="parts", value=AnyValue(array_value=ArrayValue(values=[
                        AnyValue(kvlist_value=KeyValueList(values=[
                            KeyValue(key="type", value=AnyValue(string_value="text")),
                            KeyValue(key="content", value=AnyValue(string_value=text)),
                        ]))
                    ]))),
                ]))
                for role, text in (("system", "be careful"), ("user", "restart api"))
            ]
        )
    )  # fmt: skip
    result = both(
        request(
            span(attributes=[
                KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value="chat")),
                KeyValue(key=A.GEN_AI_INPUT_MESSAGES, value=messages),
                KeyValue(key=A.MAST_STEP_INDEX, value=AnyValue(int_value=2**40)),
            ]),
            span("execute_tool t", span_id=b"\x02" * 8, attributes=[
                KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value="execute_tool")),
                KeyValue(key=A.GEN_AI_TOOL_CALL_ARGUMENTS, value=AnyValue(bytes_value=b"\x00\x01")),
                KeyValue(key=A.GEN_AI_TOOL_CALL_RESULT, value=AnyValue(double_value=0.5)),
            ]),
        )
    )  # fmt: skip
    llm, tool = result.spans
    assert llm.input_message_count == 2 and llm.input_text == "system: be careful\nuser: restart api"
    assert llm.step_index == 2**40
    assert tool.tool_name == "t" and tool.args_hash == stable_hash(b"\x00\x01") and tool.tool_result == "0.5"


def test_bad_spans_are_rejected_alone_with_reasons():
    deep = AnyValue(string_value="leaf")
    for _ in range(12):
        deep = AnyValue(array_value=ArrayValue(values=[deep]))
    many = [KeyValue(key=f"k{i}", value=AnyValue(int_value=i)) for i in range(20)]
    bad = [
        span(trace_id=bytes(16)),
        span(trace_id=b"\x01" * 15),
        span(span_id=bytes(8)),
        span(parent_span_id=b"\x01" * 3),
        span(name=""),
        span(start_time_unix_nano=0),
        span(end_time_unix_nano=NOW - 1),
        span(start_time_unix_nano=5, end_time_unix_nano=6),
        span(attributes=many),
        span(attributes=[KeyValue(key="deep", value=deep)]),
    ]
    good = [span(span_id=bytes([9, 0, 0, 0, 0, 0, 0, i + 1])) for i in range(3)]
    result = both(request(good[0], *bad[:5], good[1], *bad[5:], good[2]), DecodeOptions(max_attributes=16))
    assert [s.span_id for s in result.spans] == [sp.span_id.hex() for sp in good]
    assert result.rejected == {
        D.INVALID_TRACE_ID: 2,
        D.INVALID_SPAN_ID: 1,
        D.INVALID_PARENT_SPAN_ID: 1,
        D.MISSING_NAME: 1,
        D.INVALID_TIME: 1,
        D.END_BEFORE_START: 1,
        D.TIME_OUT_OF_RANGE: 1,
        D.TOO_MANY_ATTRIBUTES: 1,
        D.ATTRIBUTE_TOO_DEEP: 1,
    }
    assert result.rejected_count == 10
    message = result.error_message
    assert message.startswith("rejected 10 span(s)") and "invalid_trace_id=2" in message and "trace id must be 16" in message
    assert decode_protobuf(request(*good).SerializeToString()).error_message == ""


def test_json_span_level_problems():
    doc = json.loads(otlp_json_of(request(span(span_id=b"\x01" * 8), span(span_id=b"\x02" * 8), span(span_id=b"\x03" * 8))))
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["traceId"] = "not-hex-at-all"
    spans[1]["attributes"] = [{"key": "x", "value": {"intValue": "twelve"}}]
    spans.append("not an object")
    result = decode_json(json.dumps(doc))
    assert [s.span_id for s in result.spans] == ["03" * 8]
    assert result.rejected == {D.INVALID_TRACE_ID: 1, D.MALFORMED_SPAN: 2}


def test_json_invalid_utf8_rejects_only_that_span():
    body = otlp_json_of(request(span("chat AAAA", span_id=b"\x01" * 8), span("chat BBBB", span_id=b"\x02" * 8)))
    broken = body.replace(b"AAAA", b"A\xff\xfeA")
    result = decode_json(broken)
    assert [s.name for s in result.spans] == ["chat BBBB"] and result.rejected == {D.INVALID_UTF8: 1}
    surrogate = body.replace(b"BBBB", b"\\ud800")
    result = decode_json(surrogate)
    assert [s.name for s in result.spans] == ["chat AAAA"] and result.rejected == {D.INVALID_UTF8: 1}


def test_a_nul_character_rejects_the_span_on_every_path_and_cleans_free_text():
    """PostgreSQL text holds no NUL: a span name or attribute holding one is rejected by name
    (protobuf fast and general paths, gRPC, OTLP/JSON alike); the service name and status message
    are free text and only cleaned."""
    text = lambda key, value: KeyValue(key=key, value=AnyValue(string_value=value))  # noqa: E731
    nested = KeyValue(key="tags", value=AnyValue(array_value=ArrayValue(values=[
        AnyValue(string_value="ok"), AnyValue(kvlist_value=KeyValueList(values=[text("deep", "a\x00b")]))])))
    spans = [
        span("chat \x00", span_id=b"\x01" * 8),
        span("chat m", span_id=b"\x02" * 8, attributes=[text(A.GEN_AI_OPERATION_NAME, "chat"), text(A.GEN_AI_REQUEST_MODEL, "gpt\x00")]),
        span("execute_tool t", span_id=b"\x03" * 8, attributes=[text(A.GEN_AI_TOOL_NAME, "t" * 300 + "\x00")]),  # past the short-string path
        span("chat m", span_id=b"\x04" * 8, attributes=[nested]),
        span("chat m", span_id=b"\x05" * 8, status={"code": 2, "message": "bad\x00byte"}),
        span("chat m", span_id=b"\x06" * 8, attributes=[text(A.GEN_AI_OPERATION_NAME, "chat"), text(A.GEN_AI_REQUEST_MODEL, "gpt-4o")]),
    ]
    req = request(*spans)
    req.resource_spans[0].resource.attributes[0].value.string_value = "svc\x00x"
    for _ in range(2):  # the second time, every attribute read is remembered
        for result in (both(req), decode_request(req)):
            assert result.rejected == {D.NUL_CHARACTER: 4}, result.rejected
            assert [s.span_id for s in result.spans] == ["05" * 8, "06" * 8]
            assert {s.service_name for s in result.spans} == {"svc\ufffdx"}
            assert result.spans[0].status_message == "bad\ufffdbyte"
            assert "NUL character" in result.error_message and "'gen_ai.request.model'" in result.error_message


def test_protobuf_with_one_unparsable_span_keeps_its_neighbours():
    body = request(span("chat AAAA", span_id=b"\x01" * 8), span("chat BBBB", span_id=b"\x02" * 8)).SerializeToString()
    broken = body.replace(b"AAAA", b"A\xff\xfeA")
    with pytest.raises(Exception):
        ExportTraceServiceRequest.FromString(broken)  # the whole body no longer parses ...
    result = decode_protobuf(broken)  # ... but the good span survives
    assert [s.name for s in result.spans] == ["chat BBBB"] and result.rejected == {D.MALFORMED_SPAN: 1}


@pytest.mark.parametrize(
    "body", [b"\xff\xff\xff\xff", b"\x0a\xff\xff\xff\x0f", request(span()).SerializeToString()[:-3], b"\x0a\x05hello"]
)
def test_unreadable_protobuf_body(body):
    with pytest.raises(DecodeError, match="not a valid OTLP ExportTraceServiceRequest"):
        decode_protobuf(body)


@pytest.mark.parametrize(
    "body, reason",
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "must be an object"),
        (b'{"resourceSpans": {"a": 1}}', "must be an array"),
        (b'{"hello": 1}', "no resourceSpans"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
    ],
)
def test_unreadable_json_body(body, reason):
    with pytest.raises(DecodeError, match=reason):
        decode_json(body)


def test_empty_requests_are_fine():
    assert decode_json(b"{}").spans == [] and decode_protobuf(b"").spans == []


def test_huge_strings_are_truncated_not_rejected():
    huge = "x" * 2_000_000
    req = request(
        span(
            "execute_tool " + "n" * 5000,
            attributes=[
                KeyValue(key=A.GEN_AI_OPERATION_NAME, value=AnyValue(string_value="execute_tool")),
                KeyValue(key=A.GEN_AI_TOOL_CALL_RESULT, value=AnyValue(string_value=huge)),
            ],
        )
    )
    (tool,) = both(req, DecodeOptions(content_chars=100, max_string_chars=1000)).spans
    assert len(tool.tool_result) == 100 and len(tool.name) == 1024 and len(tool.tool_name) == 256
    assert tool.result_hash == stable_hash("x" * 1000)


def test_spans_beyond_the_cap_are_rejected():
    spans = [span(span_id=bytes([1, 0, 0, 0, 0, 0, 0, i + 1])) for i in range(5)]
    result = both(request(*spans), DecodeOptions(max_spans=3))
    assert len(result.spans) == 3 and result.rejected == {D.TOO_MANY_SPANS: 2}


def test_grpc_path_decodes_a_parsed_request():
    req = request_of(agent_trace())
    assert decode_request(req).spans == decode_protobuf(req.SerializeToString()).spans


def test_zero_parent_means_root():
    (root,) = both(request(span(parent_span_id=bytes(8)))).spans
    assert root.parent_span_id is None


def test_hex_ids_helper_only_touches_ids():
    assert hex_ids({"traceId": "AAAA", "name": "AAAA"}) == {"traceId": "000000", "name": "AAAA"}
