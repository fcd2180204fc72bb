"""Content values are hashed and read for a failure once per request on the fast path, with
the answers the plain reading gives (the decoder's fast and plain paths are also compared on
every recorded corpus in test_decode_fast_paths)."""

from __future__ import annotations

import ast
import json
import marshal

from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.tools import content_memo
from mast_otel.processors.tools.content_memo import content_hash, failure_in, remembering
from mast_otel.processors.tools import python_literal, values
from mast_otel.processors.tools.values import canonical, error_in

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["id", "content", "status", "error", "tool_call_id", "result", "text", "x"]), inner, max_size=3),
    max_leaves=8,
)
# texts as tools return them: JSON documents, Python-literal dicts, error words, plain text
_TEXTS = st.one_of(
    _JSON.map(json.dumps), _JSON.map(repr), st.sampled_from(["Error: refused", "error executing tool x", "ok", ""]),
    st.text(max_size=30),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=12), st.integers(min_value=1, max_value=4))
def test_remembered_answers_are_the_plain_ones(texts, bound):
    saved = content_memo.MAX_VALUES
    content_memo.MAX_VALUES = bound  # small, so the memo also starts over while it is read
    try:
        with remembering():
            for text in texts + texts:
                assert content_hash(text) == stable_hash(canonical(text))
                assert failure_in(text) == error_in(text)
    finally:
        content_memo.MAX_VALUES = saved


def test_a_repeated_text_is_read_once_while_a_memo_is_held_and_every_time_without(monkeypatch):
    calls: list[object] = []

    def counting(value, spelling=None):
        calls.append(value)
        return canonical(value)

    monkeypatch.setattr(content_memo, "canonical", counting)
    monkeypatch.setattr(content_memo, "canonical_spelled", counting)
    text = '{"tool_call_id": "call_1", "content": "42"}'
    with remembering():
        assert content_hash(text) == content_hash(str(text)) == content_hash(text)
        with remembering():  # a block inside keeps the outer memo
            content_hash(text)
    assert len(calls) == 1
    with remembering(False):
        content_hash(text), content_hash(text)
    content_hash(text)
    assert len(calls) == 4


def test_values_other_than_text_are_read_every_time(monkeypatch):
    calls: list[object] = []
    monkeypatch.setattr(content_memo, "error_in", lambda value, bare_text=False: calls.append(value))
    with remembering():
        failure_in({"status": "error"}), failure_in({"status": "error"}), failure_in("x"), failure_in("x")
    assert len(calls) == 3


def test_a_text_is_parsed_once_for_its_hash_and_its_failure(monkeypatch):
    calls: list[str] = []
    real = content_memo.read_text

    def counting(value):
        calls.append(value)
        return real(value)

    monkeypatch.setattr(content_memo, "read_text", counting)
    text = "{'status': 'error', 'tool_call_id': 'call_1'}"  # a Python literal: parsed through ast
    with remembering():
        assert _hash_or_error(content_hash, text) == _hash_or_error(lambda t: stable_hash(canonical(t)), text)
        assert failure_in(text) == error_in(text) is not None
    assert calls == [text]


# --- what a run's diagnosis reads once, and texts cut short ---------------------------------------

# texts whose reading is easy to get wrong: generated ids, per-call keys, nesting past the depth _strip reads,
# keys that only sort once an id is dropped, JSON strings holding JSON, tuples and sets
_AWKWARD = st.sampled_from([
    '{"id": "call_abc", "x": 1}', '{"id": 7, "x": 1}', '{"id": "plain", "x": 1}', "{1: 'a', 'id': 'call_x'}",
    "{1: 'a', 'b': 2}", '{"a": {"b": {"c": {"d": {"e": {"f": {"g": {"tool_call_id": "t"}}}}}}}}',
    '{"a": {"b": {"c": {"d": {"e": {"tool_call_id": "t"}}}}}}', '"{\\"id\\": \\"call_1\\", \\"v\\": 2}"',
    "({'id': 'call_1'}, 2)", "{'s': {1, 2}, 'id': 'toolu_1'}", '[{"text": "{\\"run_id\\": 1, \\"k\\": 2}"}]',
    '{"content": "{\\"tool_call_id\\": \\"c\\", \\"v\\": 1}", "tool_call_id": "c"}', '{"note": "\\"id\\": x"}',
])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_TEXTS, _AWKWARD), min_size=1, max_size=8), st.booleans())
def test_remembered_failures_and_parsed_values_read_like_the_plain_ones(texts, bare_text):
    with remembering():
        for text in texts + texts:
            assert failure_in(text, bare_text=bare_text) == error_in(text, bare_text=bare_text)
            assert canonical(content_memo.parsed_value(text)) == canonical(text)
            assert error_in(content_memo.parsed_value(text)) == error_in(text)
    assert all(content_memo.parsed_value(t) is t for t in texts)  # no memo: the value as given


def test_a_scan_is_made_once_per_reader_and_text_while_a_memo_is_held():
    reads: list[tuple[str, str]] = []

    def reader(name):
        return lambda text: reads.append((name, text)) or len(text)

    with remembering():
        assert [content_memo.scanned("a", t, reader("a")) for t in ("xy", "xy", "xyz")] == [2, 2, 3]
        assert content_memo.scanned("b", "xy", reader("b")) == 2  # another reader reads it again
    assert reads == [("a", "xy"), ("a", "xyz"), ("b", "xy")]
    content_memo.scanned("a", "xy", reader("a")), content_memo.scanned("a", "xy", reader("a"))
    assert len(reads) == 5  # no memo: every time


def _parsed_the_long_way(value):
    """``tools.values.parsed`` as it read every text: JSON, then any bracketed text through ``ast``."""
    if not isinstance(value, str) or value[:1] not in "{[\"":
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        pass
    if value[:1] in "{[" and len(value) < 65536:
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value


@settings(max_examples=400, deadline=None)
@given(st.one_of(_JSON.map(json.dumps), _JSON.map(repr), _AWKWARD), st.data())
def test_a_text_cut_short_is_not_read_through_ast_and_reads_as_before(text, data):
    """A capped JSON text (cut anywhere, in a string or between tokens) is no Python literal: it is
    kept as text without ``ast``, as ``ast`` would have kept it; every other text reads as before."""
    cut = text[:data.draw(st.integers(0, len(text)))]
    for value in (text, cut, cut + data.draw(st.sampled_from(["", " ", "'", '"', "]", "}", ", 'x'", '"""', "\\"]))):
        assert repr(values.parsed(value)) == repr(_parsed_the_long_way(value))


# --- a tool result's failure reading kept with its step ---------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.one_of(_TEXTS, _AWKWARD))
def test_the_reading_without_bare_reports_follows_from_the_bare_text_reading(text):
    """What lets normalization take the bare-text reading alone and keep it for hint derivation."""
    assert values.without_bare_text(error_in(text, bare_text=True)) == error_in(text)


@settings(max_examples=200, deadline=None)
@given(st.one_of(_JSON.map(json.dumps), st.sampled_from(["Error: refused", "error executing tool x", "ok", ""]), st.text(max_size=30),
                 st.sampled_from(["{'status': 'error', 'tool_call_id': 'call_1'}", "{'s': {1, 2}, 'id': 'toolu_1'}"])), st.booleans())
def test_a_tool_result_read_on_the_shortcuts_path_keeps_its_bare_text_reading(text, memo):
    from mast_otel.processors.ingest.normalize.common import set_tool_content
    from mast_otel.processors.model import Role, Span

    kept, plain = Span("t", "s", None, "execute_tool x", 1, 2, role=Role.TOOL), Span("t", "s", None, "execute_tool x", 1, 2, role=Role.TOOL)
    with remembering(memo):
        set_tool_content(kept, None, text, 8192)
    set_tool_content(plain, None, text, 8192)
    assert kept == plain and (kept.error, kept.error_type, kept.derived) == (plain.error, plain.error_type, plain.derived)
    if memo and text:
        assert kept.result_reading == (text, error_in(text, bare_text=True)) and kept.result_reading[0] is kept.tool_result
    else:
        assert kept.result_reading is None  # the plain path and an empty result keep none
    capped = Span("t", "s", None, "execute_tool x", 1, 2, role=Role.TOOL)
    with remembering():
        set_tool_content(capped, None, "Error: refused " + "x" * 50, 20)  # capped: the text kept is not the text read
    assert capped.result_reading is None


# --- a value is its own canonical form when nothing would be stripped ----------------------------

# keys _strip drops, spelled plainly and through escapes a text may hide them in
_SPELLINGS = st.sampled_from([
    '{"\\u0069d": "call_1", "v": 1}', '{"tool\\u005fcall_id": "c", "v": 1}', "{'\\x69d': 'call_1'}",
    '{"content": [{"type": "text", "text": "{\\"\\\\u0069d\\": \\"call_2\\"}"}]}', '{"toolUseId": "t", "v": [1, 2.5]}',
    '{"data": {"content": "x"}, "type": "tool"}', '{"kwargs": {"q": 1}}', '{"lc": 1, "kwargs": {"content": "y"}}',
    '{"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}}', "[{'toolResult': {'content': [{'text': 'ok'}]}}]",
    "{'i' 'd': 'call_1', 'x': 1}", '{"I" "d": 1, "tool" "Use" "I" "d": "t"}', "{'i'  # a comment\n 'd': 'call_1'}",
    "{('i' 'd'): 'call_1', 'x': ('a', 'b')}",
])
# keys _strip drops spelled in pieces, which Python joins
_JOINED = st.tuples(st.sampled_from(sorted(values.VOLATILE_KEYS | {"id"})), st.integers(1, 12), st.sampled_from([" ", "", "\n "])).map(
    lambda key: "{%r%s%r: 'call_1', 'x': [1, 'a']}" % (key[0][:key[1]], key[2], key[0][key[1]:]))


@settings(max_examples=400, deadline=None)
@given(st.one_of(_TEXTS, _AWKWARD, _SPELLINGS, _JOINED, _JSON.map(lambda v: json.dumps(v, ensure_ascii=True))))
def test_a_value_spelled_without_a_dropped_key_is_its_own_canonical_form(text):
    """What the fast path's hashes take for canonical: the same value as ``canonical`` makes, from
    the text a value was read from (as the memo reads it) and from a structured value's marshal bytes."""
    value, by_ast = values.read_text(text)
    assert values.canonical_spelled(value if type(value) is not str else text, None if by_ast else text) == canonical(text)
    with remembering():
        assert _hash_or_error(content_hash, text) == _hash_or_error(lambda t: stable_hash(canonical(t)), text)
    try:
        spelling = marshal.dumps(value, 0)
    except ValueError:  # (nested deeper than marshal writes: the memo hashes it afresh)
        return
    assert values.canonical_spelled(value, spelling) == canonical(value)


@settings(max_examples=300, deadline=None)
@given(st.one_of(_TEXTS, _AWKWARD, _SPELLINGS, _JOINED))
def test_a_text_is_read_as_parsed_reads_it(text):
    value, by_ast = values.read_text(text)
    assert repr(value) == repr(values.parsed(text)) == repr(values.parsed(text, fast=True))
    assert by_ast == (value is not text and _reads_as_json(text) is None and python_literal.respelled_value(text) is python_literal.NOT_RESPELLED)


def _hash_or_error(hash_of, text):
    try:
        return hash_of(text)
    except TypeError:  # keys of several types, which json cannot sort: no hash (content_hash gives None)
        return None


def _reads_as_json(text):
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def test_every_key_strip_drops_is_one_a_spelling_is_searched_for():
    assert all("id" in key or "Id" in key for key in values.VOLATILE_KEYS | {"id"})
    plain = {"name": "get_weather", "args": {"city": "Paris"}}
    for spelling in (json.dumps(plain), marshal.dumps(plain, 0)):
        assert values.canonical_spelled(plain, spelling) is plain  # kept: no copy made
    for spelling in ('{"x": "\\u0069d"}', b'..id..', b"Id"):
        assert values.canonical_spelled(plain, spelling) is not plain
