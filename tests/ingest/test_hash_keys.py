"""A tool value whose map keys JSON cannot sort or write (a Python literal's ``{1: 'a', 'b': 2}``,
a tuple as a key) gets no hash, as the instrumentation records none for it, and costs its request
nothing, on both decode paths: before, the hash raised ``TypeError`` and the whole request failed."""

from __future__ import annotations

import json

import pytest

from mast_otel.processors.ingest.decode import DecodeOptions, decode_json
from mast_otel.wire.hashing import stable_hash

TRACE = "0af7651916cd43dd8448eb211c80319c"


def _request(arguments: str, result: str) -> str:
    def span(span_id, name, parent, attrs):
        return {"traceId": TRACE, "spanId": span_id, "parentSpanId": parent, "name": name,
                "startTimeUnixNano": "1700000000100000000", "endTimeUnixNano": "1700000000200000000",
                "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        span("b7ad6b7169203331", "invoke_agent a", "", {"gen_ai.operation.name": "invoke_agent"}),
        span("b7ad6b7169203332", "execute_tool t", "b7ad6b7169203331", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t",
            "gen_ai.tool.call.arguments": arguments, "gen_ai.tool.call.result": result}),
    ]}]}]})


@pytest.mark.parametrize("fast", [True, False], ids=["shortcuts", "plain"])
@pytest.mark.parametrize("text", ["{1: 'a', 'b': 2}", "{(1, 2): 'a'}", "{None: 1, 'x': [{2: 3, 'y': 4}]}"])
def test_a_value_with_keys_json_cannot_sort_gets_no_hash_and_keeps_its_request(text, fast):
    result = decode_json(_request(text, "{'ok': True}"), DecodeOptions(fast=fast))
    assert not result.rejected and len(result.spans) == 2
    tool = next(s for s in result.spans if s.tool_name == "t")
    assert tool.args_hash is None and tool.tool_args
    assert tool.result_hash == stable_hash({"ok": True})  # the rest of the span read as ever
