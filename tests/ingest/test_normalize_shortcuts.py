"""The normalizers' shortcuts, taken while a content memo is held (the decoder's fast path), give
what the plain path gives: OpenInference's flattened messages read in one pass for both sides,
structured values hashed once per distinct value, JSON text read through orjson. Each is compared
here with the plain path on generated input; test_decode_fast_paths compares the two paths on
every recorded corpus."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.ingest.normalize import normalize
from mast_otel.processors.ingest.normalize import openinference
from mast_otel.processors.tools import content_memo, json_text
from mast_otel.processors.tools.content_memo import content_hash, remembering
from mast_otel.processors.tools.values import canonical

from .test_openinference_messages import _KEY, _VALUE


def _both_paths(name: str, attrs: dict[str, Any], chars: int) -> tuple[Any, Any]:
    plain = normalize(name, attrs, chars)
    with remembering():
        fast = normalize(name, attrs, chars)
    return plain, fast


# --- OpenInference model calls -----------------------------------------------------------------

_TEXT_VALUE = st.one_of(_VALUE, st.text(min_size=5, max_size=40))


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_KEY, _TEXT_VALUE, max_size=16), st.sampled_from([1, 7, 30, 200, 8192]),
       st.booleans(), st.booleans())
def test_openinference_messages_read_in_one_pass_match_the_plain_reading(attrs, chars, tools, whole):
    attrs = {**attrs, "openinference.span.kind": "LLM"}
    if tools:
        attrs["llm.tools.0.tool.json_schema"] = "{}"
    if whole:
        attrs.update({"input.value": "the whole input", "output.value": ["the", "whole", "output"]})
    plain, fast = _both_paths("ChatModel", attrs, chars)
    assert fast == plain


def test_a_long_conversation_is_cut_as_the_plain_path_cuts_it_and_counted_whole():
    attrs: dict[str, Any] = {"openinference.span.kind": "LLM"}
    for n in range(40):
        attrs[f"llm.input_messages.{n}.message.role"] = "user" if n % 2 else "assistant"
        attrs[f"llm.input_messages.{n}.message.content"] = f"message {n} " * 20
    attrs["llm.output_messages.0.message.role"] = "assistant"
    attrs["llm.output_messages.0.message.contents.0.message_content.text"] = "calling"
    attrs["llm.output_messages.0.message.tool_calls.1.tool_call.function.name"] = "second"
    attrs["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] = "first"
    for chars in (0, 1, 250, 251, 252, 5000, 100_000):
        plain, fast = _both_paths("ChatModel", attrs, chars)
        assert fast == plain
        assert fast["input_message_count"] == 40 and fast["requested_tools"] == ("first", "second")


def test_a_message_number_int_cannot_read_is_no_message():
    """``"²".isdigit()`` is true but ``int("²")`` fails: such a key is no message's, on either path
    (it raised ValueError before, failing the span's whole request)."""
    attrs = {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user",
             "llm.input_messages.0.message.content": "hi", "llm.input_messages.².message.role": "user",
             "llm.input_messages.1.message.contents.³.message_content.text": "x"}
    plain, fast = _both_paths("ChatModel", attrs, 100)
    assert plain == fast and plain["input_message_count"] == 2 and plain["input_text"] == "user: hi"
    genai = {"gen_ai.operation.name": "chat", "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "hi",
             "gen_ai.prompt.².role": "user"}
    assert normalize("chat", genai)["input_message_count"] == 1


def test_what_a_key_says_is_remembered_within_a_bound(monkeypatch):
    monkeypatch.setattr(openinference, "_MAX_MESSAGE_KEYS", 3)
    monkeypatch.setattr(openinference, "_MESSAGE_KEYS", {})
    attrs = {"openinference.span.kind": "LLM", **{f"llm.input_messages.{n}.message.content": f"m{n}" for n in range(6)},
             "llm.input_messages.0.message.role": "user"}
    plain, fast = _both_paths("ChatModel", attrs, 100)
    assert fast == plain and len(openinference._MESSAGE_KEYS) <= 3


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_KEY, _TEXT_VALUE), max_size=16), st.lists(_TEXT_VALUE, min_size=16, max_size=16),
       st.sampled_from([1, 30, 8192]))
def test_a_key_list_read_again_with_other_values_matches_the_plain_reading(pairs, others, chars):
    """Where a span's messages are is worked out once per list of keys: a later span with the same
    keys in the same order (other values), or in another order (``.1.`` and ``.01.`` name one
    message, the later key winning), reads as the plain path reads it."""
    keys = list(dict.fromkeys(key for key, _ in pairs))
    first = {"openinference.span.kind": "LLM", **dict(pairs)}
    again = {"openinference.span.kind": "LLM", **dict(zip(keys, others))}
    turned = {"openinference.span.kind": "LLM", **{key: first[key] for key in reversed(keys)}}
    for attrs in (first, again, turned, first):
        plain, fast = _both_paths("ChatModel", attrs, chars)
        assert fast == plain


def test_a_later_key_naming_the_same_message_wins_in_either_order():
    one, zero_one = "llm.input_messages.1.message.content", "llm.input_messages.01.message.content"
    for order in ((one, zero_one), (zero_one, one)):
        attrs = {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user",
                 order[0]: "first", order[1]: "second"}
        plain, fast = _both_paths("ChatModel", attrs, 100)
        assert fast == plain
        assert fast["input_text"] == "second" and fast["input_message_count"] == 2


def test_where_messages_are_is_remembered_within_a_bound(monkeypatch):
    monkeypatch.setattr(openinference, "_MAX_PLAN_CHARS", 400)
    monkeypatch.setattr(openinference, "_PLANS", {})
    for n in range(12):
        attrs = {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user",
                 **{f"llm.input_messages.{m}.message.content": f"m{m}" for m in range(n)}}
        plain, fast = _both_paths("ChatModel", attrs, 100)
        assert fast == plain
        assert sum(len(key) for keys in openinference._PLANS for key in keys) <= 400
    assert openinference._PLANS  # the last list of keys, short enough, is kept


# --- structured values hashed once ---------------------------------------------------------------

_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, -0.0, 1.0, 1.5, math.inf]),
                    st.text(max_size=4), st.binary(max_size=3))
_STRUCTURED = st.recursive(
    _SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.sampled_from(["id", "a", "content", "tool_call_id", "status"]), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_STRUCTURED, min_size=1, max_size=10))
def test_structured_values_are_hashed_as_the_plain_path_hashes_them(values):
    with remembering():
        for value in values + values:
            assert content_hash(value) == stable_hash(canonical(value))


def test_values_python_finds_equal_still_hash_apart():
    """``{"a": 1} == {"a": 1.0} == {"a": True}``, but their JSON differs, and so do their hashes."""
    values = [{"a": 1}, {"a": 1.0}, {"a": True}, [0], [0.0], [-0.0], [False], (1,), [1], {"a": b"x"}, {"a": "x"}]
    with remembering():
        found = [content_hash(v) for v in values]
    assert found == [stable_hash(canonical(v)) for v in values]
    assert len(set(found[:3])) == 3


def test_a_structured_value_is_hashed_once_while_a_memo_is_held(monkeypatch):
    calls: list[object] = []
    real = content_memo.canonical_spelled
    monkeypatch.setattr(content_memo, "canonical_spelled", lambda value, spelling: calls.append(value) or real(value, spelling))
    with remembering():
        for _ in range(3):
            content_hash({"command": "kubectl get pods", "limit": 10})  # a new dict each time
    assert len(calls) == 1


class _Opaque:
    def __init__(self, text: str) -> None:
        self.text = text


def test_values_marshal_cannot_write_are_hashed_every_time():
    with remembering():
        assert content_hash({"a": _Opaque("x")}) == stable_hash(canonical({"a": _Opaque("x")}))
        assert content_hash({"a": _Opaque("y")}) != content_hash({"a": _Opaque("x")})
    deep: Any = "x"
    for _ in range(3000):  # past marshal's depth limit, and json's: no hash on either path, as the instrumentation gives none
        deep = [deep]
    for memo in (False, True):
        with remembering(memo):
            assert content_hash(deep) is None


# --- JSON text through orjson -------------------------------------------------------------------

_ODD_JSON = [
    "NaN", "[NaN, Infinity, -Infinity]", "1e400", "[-1e400]", "1e-400", "123456789012345678901234567890",
    "[18446744073709551615]", "[18446744073709551616]", "-9223372036854775808", "-9223372036854775809",
    "[1000000000000000000]", "[999999999999999999]", '{"a": 1, "a": 2}', '"\\ud800"', '"\\ud83d\\ude00"',
    "\ufeff[1]", " [1] ", "[1]\n", "[1] x", '"a\tb"', '"a\x00b"', "[1,]", '{"a":1,}', "01", "-0", "-0.0",
    "0.1", "1.7976931348623157e308", "5e-324", "2.2250738585072011e-308", "1E2", "1e+2", "[" * 2000 + "]" * 2000,
    "[" * 1000 + "]" * 1000, "'a'", "tru", "true", "null", '""', "", " ", '"\u2028"', '{"\\u0000":1}',
    "[100000000000000000000.0]", "[0.30000000000000004]", "[1e16]", "[123456789012345678]", '"\udcff"',
    "[.5]", "[5.]", "[+1]", "[0x10]", "[1_000]", '{"a":"\\x"}', '"\\u12"', '{"é": "ü", "k": [1.25e-7, -3]}',
    '["1234567890123456789"]', "[12345678901234567.5]", "[0.1234567890123456789]", "\x0c[1]", "[1]\x0c",
    '{"a":' * 1000 + "1" + "}" * 1000, '[{"a":' * 100 + '{"a":' * 800 + "1" + "}" * 800 + "}]" * 100,  # past json's stack
]


def _read(loads: Any, text: str) -> tuple[str, str]:
    try:
        return "value", repr(loads(text))  # repr: 1 and 1.0 and True apart, NaN equal to itself
    except (ValueError, RecursionError) as error:
        return "error", f"{type(error).__name__}: {error}"


def test_odd_json_reads_as_the_json_module_reads_it():
    for text in _ODD_JSON:
        assert _read(json_text.loads, text) == _read(json.loads, text), text


_JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=12,
)
_NUMBER_TEXT = st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,24})?([eE][-+]?[0-9]{1,3})?\Z")


@settings(max_examples=500, deadline=None)
@given(st.one_of(_JSON_VALUE.map(lambda v: json.dumps(v, ensure_ascii=False)), _JSON_VALUE.map(json.dumps),
                 _NUMBER_TEXT, _NUMBER_TEXT.map(lambda n: f'{{"a": [{n}], "a": {n}}}'),
                 st.text(alphabet='[]{}",:0123456789.eE-+ \\untrfalse\ud800', max_size=20)))
def test_json_text_reads_as_the_json_module_reads_it(text):
    assert _read(json_text.loads, text) == _read(json.loads, text)


# --- a run's model calls, each read from the one before -------------------------------------------

_CALL_ID = st.sampled_from(["call_1", "call_2", "c3"])
_GENAI_MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]), "content": st.text(max_size=30)}),
    st.fixed_dictionaries({"role": st.just("assistant"), "content": st.none(), "tool_calls": st.lists(
        st.fixed_dictionaries({"id": _CALL_ID, "type": st.just("function"), "function": st.fixed_dictionaries(
            {"name": st.sampled_from(["get_pods", "search"]), "arguments": st.sampled_from(['{"q": 1}', '{"q": 1.0}', "{}"])})}),
        max_size=2)}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": _CALL_ID,
                           "content": st.sampled_from(["ok", '{"status": "error"}', "[REDACTED]", "", "Error: no"])}),
    st.fixed_dictionaries({"role": st.just("assistant"), "parts": st.lists(st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "content": st.text(max_size=20)}),
        st.fixed_dictionaries({"type": st.just("tool_call"), "id": _CALL_ID, "name": st.just("search"),
                               "arguments": st.sampled_from([{"q": 1}, {"q": True}, {"q": 1.0}, None])}),
        st.fixed_dictionaries({"type": st.just("tool_call_response"), "id": _CALL_ID,
                               "response": st.sampled_from(["found", {"result": 2}, None])})), max_size=3)}),
    st.text(max_size=10),
)
_SEPARATORS = st.sampled_from([(", ", ": "), (",", ":"), (" ,  ", ":")])


def _texts(messages: list[Any], cuts: list[int], separators: tuple[str, str], odd: int) -> list[str]:
    texts = [json.dumps(messages[:cut], separators=separators) for cut in sorted(cuts)]
    if texts and odd:  # a call whose text only looks like a longer array
        last = texts[-1]
        texts.append([last[:-1] + ",]", last[:-1] + ", NaN]", last + " ", last[:-1] + ', {"role": "user"}] x',
                      last[:-1] + ", 1" + "0" * 20 + "]", '{"messages": ' + last + "}"][odd - 1])
    return texts


@settings(max_examples=300, deadline=None)
@given(st.lists(_GENAI_MESSAGE, min_size=1, max_size=10), st.lists(st.integers(0, 10), min_size=1, max_size=5),
       _SEPARATORS, st.integers(0, 6), st.sampled_from([0, 5, 40, 300, 8192]), st.booleans())
def test_a_runs_model_calls_read_from_the_one_before_match_the_plain_reading(messages, cuts, separators, odd, chars, output):
    texts = _texts(messages, cuts, separators, odd)
    calls = [{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.input.messages": text,
              **({"gen_ai.output.messages": json.dumps(messages[-1:])} if output else {})} for text in texts]
    plain = [normalize("chat m", attrs, chars) for attrs in calls]
    with remembering():
        fast = [normalize("chat m", attrs, chars) for attrs in calls]
    assert fast == plain


def test_a_call_is_read_from_the_one_before_it():
    """Three calls, each the last one's messages and two more: the later ones parse only their new messages."""
    history = [{"role": "system", "content": "You operate a cluster. " * 4}, {"role": "user", "content": "pods?"}]
    texts = []
    for n in range(3):
        history = history + [{"role": "assistant", "tool_calls": [{"id": f"call_{n}", "function": {"name": "get_pods", "arguments": "{}"}}]},
                             {"role": "tool", "tool_call_id": f"call_{n}", "content": f"pod-{n} Running"}]
        texts.append(json.dumps(history))
    parsed: list[str] = []
    real = json_text.loads
    with remembering():
        import mast_otel.processors.ingest.normalize.genai as genai
        genai.json_loads, saved = (lambda text: parsed.append(text) or real(text)), genai.json_loads
        try:
            fast = [normalize("chat m", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": t}) for t in texts]
        finally:
            genai.json_loads = saved
    assert fast == [normalize("chat m", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": t}) for t in texts]
    assert len(parsed) == 2 and all(p.count('"role"') == 2 for p in parsed)  # the new messages only
    assert set(fast[-1]["tool_exchanges"]) == {"call_0", "call_1", "call_2"}


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=12), st.sampled_from(_ODD_JSON),
                 st.tuples(st.sampled_from([" ", "\t", "\n", "\r", "\x0c", "\u3000", ""]), st.sampled_from(_ODD_JSON)).map("".join)))
def test_a_text_said_not_to_be_json_is_none(text):
    """``maybe_json`` on the shortcuts path skips texts no JSON document starts like: json.loads fails on each."""
    from mast_otel.processors.tools.json_text import may_be_json

    if not may_be_json(text):
        assert _read(json.loads, text)[0] == "error"


# --- what repeats from call to call within a request, read once ------------------------------------

_PARAMS = st.sampled_from(['{"model": "gpt-4o"}', '{"model": "gpt-4o", "temperature": 0}', '{"temperature": 0}',
                           '["gpt-4o"]', "not json", '{"model": 1}', '{"model": ""}', ""])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.one_of(_PARAMS, st.just({"model": "structured"})), st.sampled_from(["m", "", None])),
                min_size=1, max_size=6))
def test_a_runs_invocation_parameters_read_once_match_the_plain_reading(calls):
    spans = [{"openinference.span.kind": "LLM", "llm.invocation_parameters": params,
              **({"llm.model_name": model} if model is not None else {})} for params, model in calls]
    plain = [normalize("ChatModel", attrs) for attrs in spans]
    with remembering():
        fast = [normalize("ChatModel", attrs) for attrs in spans]
    assert fast == plain


_EVENT_TEXT = st.sampled_from(["hello", '[{"text": "hi"}]', '{"a": 1}', "1", '[{"toolUse": {"toolUseId": "c1", "name": "get_pods", "input": {}}}]',
                               '[{"type": "text", "content": "part"}]', ""])
_EVENT = st.one_of(
    st.tuples(st.sampled_from(["gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message"]),
              st.fixed_dictionaries({"content": st.one_of(_EVENT_TEXT, st.integers(0, 2), st.just(1.0), st.none(),
                                                           st.just([{"text": "a list"}]))},
                                    optional={"id": st.sampled_from(["c1", "c2"]), "role": st.sampled_from(["model", "user", ""]),
                                              "tool_calls": st.sampled_from(['[{"id": "c1", "function": {"name": "scale", "arguments": "{}"}}]',
                                                                             "[]"])})),
    st.tuples(st.just("gen_ai.choice"), st.fixed_dictionaries({"message": _EVENT_TEXT}, optional={"finish_reason": st.just("stop")})),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_EVENT, max_size=8), st.lists(st.integers(0, 8), min_size=1, max_size=4),
       st.sampled_from(["chat", "execute_tool", "invoke_agent"]))
def test_a_runs_message_events_read_once_match_the_plain_reading(events, cuts, operation):
    """Each call of a run carries its run's earlier message events again: while a memo is held each
    distinct event is made a message once and handed out again; the spans come out as the plain path's."""
    from mast_otel.processors.ingest.normalize import normalize_into
    from mast_otel.processors.ingest.normalize.common import Fields

    attrs = {"gen_ai.operation.name": operation, "gen_ai.request.model": "m"}

    def run() -> list[dict[str, Any]]:
        found = []
        for cut in sorted(cuts):
            fields = Fields()
            normalize_into(fields, operation, attrs, 8192, [(name, dict(event)) for name, event in events[:cut]])
            found.append(fields.values)
        return found

    plain = run()
    with remembering():
        fast = run()
    assert fast == plain
