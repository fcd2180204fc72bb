"""A Python-literal text read through JSON (the fast path's ``parsed``) gives what ``ast.literal_eval``
gives, or fails where it fails: printed values of every kind, and texts cut and spliced from them."""

from __future__ import annotations

import ast
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.processors.tools import python_literal
from mast_otel.processors.tools.python_literal import literal_value

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")  # ast on odd escapes

_TEXT = st.text(alphabet=st.one_of(
    st.sampled_from("'\"\\/ \t\n\r\x00\x0c{}[](),:#-+.eE0123456789abcTrueFalsNonjxu\u00e9\u2028\ud800\U0001f600"),
    st.characters()), max_size=10)
_SCALARS = st.none() | st.booleans() | st.integers() | st.integers(min_value=-2**80, max_value=2**80) | st.floats() | _TEXT
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3)
    | st.dictionaries(st.integers(), inner, max_size=2) | st.tuples(inner) | st.frozensets(st.integers(), max_size=2),
    max_leaves=10,
)
# splices a printed value may be cut at or joined with: tokens whose meaning differs between Python and JSON
_SPLICES = st.sampled_from(["", " ", "'", '"', "]", "}", ",", ", 'x'", "'a' 'b'", "''", '"""', "\\", "true", "null", "NaN",
                            "1_0", "0x1", "01", ".5", "5.", "-", "- 1", "+1", "1j", "#", "(", "{1}", "[1,]", "\n", "\t",
                            "'\ud800'", '"\udfff"', "'\\/'", "'\\\"'", '"\\/"', "'\\u00e9'", "'\\x41'", "'\\N{BULLET}'"])


def _reading(read: Any, text: str) -> str:
    """What ``read`` made of ``text``, exact to types (``1``, ``1.0``, ``True``), or that it failed."""
    try:
        return repr(read(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as error:
        return f"failed: {type(error).__name__}"


def _same(text: str) -> None:
    fast, plain = _reading(literal_value, text), _reading(ast.literal_eval, text)
    assert fast == plain or (fast.startswith("failed") and plain.startswith("failed")), text


@settings(max_examples=600, deadline=None)
@given(_VALUES, st.data())
def test_a_printed_value_reads_as_ast_reads_it(value, data):
    text = repr(value)
    _same(text)
    cut = data.draw(st.integers(0, len(text)))
    _same(text[:cut] + data.draw(_SPLICES) + text[cut:])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_SPLICES, _TEXT, _VALUES.map(repr)), max_size=6))
def test_any_text_of_its_tokens_reads_as_ast_reads_it(parts):
    _same("[" + "".join(parts) + "]")
    _same("{" + "".join(parts) + "}")


def test_the_shortcut_is_taken_and_its_edges_go_to_ast(monkeypatch):
    calls: list[str] = []
    real = ast.literal_eval
    monkeypatch.setattr(python_literal.ast, "literal_eval", lambda text: calls.append(text) or real(text))
    assert literal_value("{'a': True, 'b': [None, 1.5, -2e+16], \"c\": 'say \"hi\"'}") == \
        {"a": True, "b": [None, 1.5, -2e16], "c": 'say "hi"'}
    assert calls == []
    nested = "[" * 101 + "]" * 101  # more brackets than counted: ast's own limits decide
    edges = ("{'a': (1, 2)}", "{'a\\n': 1}", "[1_000]", nested, "[\ud800]", "{1: 'a'}", "[01]", "[true]")
    for text in edges:
        _reading(literal_value, text)
    assert calls == list(edges)
