"""The span codec (what the store keeps of a re-routed run and of a session's turn): spans read
back equal to what was written, text written by a build before fields were left out still
reads, a build before reads the new text, and fields no span has filled are not written (what a
turn costs the store grows with its length)."""

from __future__ import annotations

from operator import attrgetter

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.processors.model import GuardIntervention, Role, RunHints, Span
from mast_otel.processors.service.store.span_codec import SpanEncoder, parse_run, parse_spans

TRACE = "ab" * 16

# Written by the build before fields were left out: every field named, most of them null.
OLD_TEXT = (
    '{"fields":["trace_id","span_id","parent_span_id","name","start_ns","end_ns","role","error","error_type",'
    '"status_message","service_name","convention","agent_name","workflow","conversation_id","hints","model",'
    '"request_model","provider","input_tokens","output_tokens","input_message_count","finish_reasons",'
    '"requested_tools","tools_offered","answer_tools","tool_name","tool_kind","tool_kind_source","args_hash",'
    '"result_hash","verification_passed","step_index","step_budget","unit_span_id","input_text","output_text",'
    '"tool_args","tool_result","tool_description","tool_call_id","tool_exchanges","derived","content_source",'
    '"guard_interventions","wire_bytes"],"rows":[["abababababababababababababababab","1111111111111111",null,'
    '"invoke_agent triage",1,9,"agent",false,null,null,"svc",null,null,false,"conv-7",{"max_steps":3,'
    '"budget_framework":null,"ambiguous":null,"constraints":["read_only"],"role":null,"allowed_tools":null,'
    '"termination_reason":null,"claimed_success":null,"outcome":null,"score":null,"final_answer":null,"task":null,'
    '"rejected_by_check":null,"derived":null},null,null,null,null,null,null,[],[],null,[],null,null,null,null,null,'
    'null,null,null,null,null,null,null,null,null,null,null,null,null,[],0],["abababababababababababababababab",'
    '"2222222222222222","1111111111111111","execute_tool search",2,5,"tool",true,null,null,null,null,null,false,'
    'null,null,null,null,null,null,null,null,["stop"],[],null,[],"search","read",null,null,null,null,null,null,null,'
    'null,null,null,null,null,null,null,null,null,[],300]]}'
)


def _two_spans() -> list[Span]:
    return [Span(TRACE, "11" * 8, None, "invoke_agent triage", 1, 9, role=Role.AGENT, service_name="svc",
                 conversation_id="conv-7", hints=RunHints(max_steps=3, constraints=("read_only",))),
            Span(TRACE, "22" * 8, "11" * 8, "execute_tool search", 2, 5, role=Role.TOOL, error=True,
                 tool_name="search", tool_kind="read", finish_reasons=("stop",), wire_bytes=300)]


def _old_build_reads(text: str) -> list[dict]:
    """What the build before read of a text: each span's values by field name, ``role`` and the
    fields without a default required (it looked them up by name)."""
    data = orjson.loads(text)
    rows = [dict(zip(data["fields"], row)) for row in data["rows"]]
    for row in rows:
        assert {"trace_id", "span_id", "parent_span_id", "name", "start_ns", "end_ns", "role"} <= row.keys()
    return rows


def test_text_from_the_build_before_reads_as_the_spans_it_held():
    spans = parse_spans(OLD_TEXT)
    assert spans == _two_spans()
    assert spans[1].wire_bytes == 300 and spans[0].hints.constraints == ("read_only",)


def test_fields_no_span_filled_are_not_written_and_read_back_as_their_defaults():
    encode = SpanEncoder()
    spans = _two_spans()
    text = encode(spans)
    names = orjson.loads(text)["fields"]
    assert "input_text" not in names and "model" not in names and "tool_exchanges" not in names
    assert {"tool_name", "hints", "error", "finish_reasons", "wire_bytes", "role"} <= set(names)
    assert len(text) < len(OLD_TEXT) * 0.6
    assert parse_spans(text) == spans and parse_spans(text)[1].wire_bytes == 300


def test_a_field_filled_later_is_written_from_then_on():
    encode = SpanEncoder()
    encode(_two_spans())
    later = _two_spans()
    later[1].tool_result = "42 rows"
    later[0].model = "gpt-4o"
    text = encode(later)
    assert parse_spans(text) == later and parse_spans(text)[1].tool_result == "42 rows"
    again = encode(_two_spans())  # the fields stay written (null) for spans that do not fill them
    assert {"tool_result", "model"} <= set(orjson.loads(again)["fields"]) and parse_spans(again) == _two_spans()


def test_the_build_before_reads_the_new_text():
    encode = SpanEncoder()
    rows = _old_build_reads(encode(_two_spans()))
    assert [r["role"] for r in rows] == ["agent", "tool"] and rows[1]["tool_name"] == "search"


def test_every_role_and_no_span_round_trip():
    encode = SpanEncoder()
    plain = [Span(TRACE, "33" * 8, None, "other", 1, 2)]  # role OTHER: still written, by name
    assert "role" in orjson.loads(encode(plain))["fields"]
    assert parse_spans(encode(plain)) == plain
    assert parse_spans(encode([])) == []


def _plain_text(spans: list[Span], names: list[str]) -> str:
    """The text as the encoder wrote it before its reads were compiled: each span's fields read by
    name (``attrgetter``) for the fields ``names`` lists."""
    read = attrgetter(*names)
    return orjson.dumps({"fields": names, "rows": [read(s) if len(names) > 1 else (read(s),) for s in spans]}).decode()


_TEXTS = st.one_of(st.none(), st.text(max_size=8))
_SPANS = st.builds(
    Span, st.just(TRACE), st.text("0123456789abcdef", min_size=16, max_size=16), st.none() | st.just("11" * 8),
    st.text(max_size=12), st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1),
    role=st.sampled_from(list(Role)), error=st.booleans(), model=_TEXTS, tool_name=_TEXTS, input_text=_TEXTS,
    input_tokens=st.none() | st.integers(0, 10**6), finish_reasons=st.lists(st.text(max_size=5), max_size=2).map(tuple),
    tools_offered=st.none() | st.booleans(), wire_bytes=st.integers(0, 10**6), conversation_id=_TEXTS,
    hints=st.none() | st.builds(RunHints, max_steps=st.none() | st.integers(0, 50),
                                constraints=st.lists(st.text(max_size=5), max_size=2).map(tuple),
                                allowed_tools=st.none() | st.lists(st.text(max_size=5), max_size=2).map(tuple),
                                derived=st.none() | st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2)),
    requested_tools=st.lists(st.text(max_size=5), max_size=2).map(tuple),
    answer_tools=st.lists(st.text(max_size=5), max_size=2).map(tuple),
    tool_exchanges=st.none() | st.dictionaries(st.text(max_size=6), st.tuples(_TEXTS, _TEXTS, _TEXTS), max_size=3),
    guard_interventions=st.lists(st.builds(GuardIntervention, st.text(max_size=4), st.sampled_from(["loop", "budget"]),
                                           st.sampled_from(["observe", "enforce"]), st.just("blocked"), st.just("FM-1.3"),
                                           st.lists(st.text(max_size=4), max_size=2).map(tuple)), max_size=2).map(tuple))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_SPANS, max_size=5), max_size=4))
def test_compiled_reads_write_what_reading_each_field_by_name_wrote(batches: list[list[Span]]):
    """Property: for any spans, in any order of batches (the layout widening as fields fill), the
    text is the one reading every field by name gives, and it reads back as the spans."""
    encode = SpanEncoder()
    for spans in batches:
        text = encode(spans)
        names = orjson.loads(text)["fields"]
        assert text == _plain_text(spans, names)
        assert parse_spans(text) == spans


def test_the_run_s_links_are_written_with_its_spans_and_text_without_them_reads_as_none():
    """A replica re-diagnosing a re-routed run re-links its own steps below the spans the first
    replica did not keep: their parent links are stored beside the spans; older text has none."""
    spans, links = _two_spans(), {"0a" * 8: "0b" * 8, "0c" * 8: None}
    text = SpanEncoder()(spans, links)
    assert parse_run(text) == (spans, links)
    assert parse_spans(text) == spans
    assert _old_build_reads(text) == _old_build_reads(SpanEncoder()(spans))  # the build before ignores them
    assert parse_run(SpanEncoder()(spans)) == (spans, {})


def test_fields_this_version_does_not_know_are_ignored_and_a_field_named_twice_reads_as_its_last_value():
    """A newer build may write fields this one lacks; rows are read by the names the text gives."""
    text = orjson.dumps({"fields": ["trace_id", "span_id", "parent_span_id", "name", "start_ns", "end_ns", "role",
                                    "from_a_later_build", "model", "model"],
                         "rows": [[TRACE, "44" * 8, None, "chat", 1, 2, "llm", {"x": 1}, "first", "second"]]}).decode()
    assert parse_spans(text) == [Span(TRACE, "44" * 8, None, "chat", 1, 2, role=Role.LLM, model="second")]
