"""Content values are hashed and read for a failure once per request on the fast path, with
the answers the plain reading gives (the decoder's fast and plain paths are also compared on
every recorded corpus in test_decode_fast_paths)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.ingest.normalize import content_memo
from mast_otel.processors.ingest.normalize.content_memo import content_hash, failure_in, remembering
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

    def counting(value):
        calls.append(value)
        return canonical(value)

    monkeypatch.setattr(content_memo, "canonical", counting)
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
    monkeypatch.setattr(content_memo, "error_in", lambda value: calls.append(value))
    with remembering():
        failure_in({"status": "error"}), failure_in({"status": "error"}), failure_in("x"), failure_in("x")
    assert len(calls) == 3


def test_a_text_is_parsed_once_for_its_hash_and_its_failure(monkeypatch):
    calls: list[str] = []
    real = content_memo.parsed

    def counting(value):
        calls.append(value)
        return real(value)

    monkeypatch.setattr(content_memo, "parsed", counting)
    text = "{'status': 'error', 'tool_call_id': 'call_1'}"  # a Python literal: parsed through ast
    with remembering():
        assert content_hash(text) == stable_hash(canonical(text))
        assert failure_in(text) == error_in(text) is not None
    assert calls == [text]
