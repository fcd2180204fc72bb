"""``data_hash`` (orjson's canonical text where it writes the same bytes) gives ``stable_hash``'s
digest on every kind of plain data, including what orjson writes otherwise or refuses."""

from __future__ import annotations

import dataclasses
import datetime
import math
import struct

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.processors.tools import data_hash as module
from mast_otel.processors.tools.data_hash import data_hash
from mast_otel.wire.hashing import canonical_json, stable_hash

# every code point, lone surrogates and control characters included
_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=12)
_FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.floats(min_value=-1e-3, max_value=1e-3) \
    | st.integers(0, 2**64 - 1).map(lambda bits: struct.unpack("<d", bits.to_bytes(8, "little"))[0])
_SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(-2**70, 2**70) | _FLOATS | _TEXT
            | st.sampled_from(["null", "e-5", "0.00001", "\x7f", "\u2028", "\x1f", '"\\', "\U0001f600", "\uffff"]))
_PLAIN = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)
# what orjson must refuse so the plain path answers: keys that are no text, bytes, sets, complex
_AWKWARD = st.recursive(
    _SCALARS | st.binary(max_size=4) | st.frozensets(st.integers(), max_size=3) | st.just(1 + 2j),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT | st.integers(), inner, max_size=3),
    max_leaves=8,
)


def _plain_or_error(value: object) -> str | type:
    try:
        return stable_hash(value)
    except (TypeError, ValueError, RecursionError) as exc:
        return type(exc)


def _fast_or_error(value: object) -> str | type:
    try:
        return data_hash(value)
    except (TypeError, ValueError, RecursionError) as exc:
        return type(exc)


@settings(max_examples=1500, deadline=None)
@given(_PLAIN)
def test_plain_data_hashes_as_stable_hash_does(value):
    assert data_hash(value) == stable_hash(value)


@settings(max_examples=600, deadline=None)
@given(_AWKWARD)
def test_what_orjson_refuses_or_writes_otherwise_hashes_as_stable_hash_does(value):
    assert _fast_or_error(value) == _plain_or_error(value)


@settings(max_examples=3000, deadline=None)
@given(_FLOATS)
def test_a_float_orjson_writes_otherwise_is_seen_in_its_output(number):
    """The check the fast path rests on: orjson's text of a float is json's, or holds a marker."""
    written = orjson.dumps(number)
    plain = canonical_json(number).encode()
    assert written == plain or any(marker in written for marker in module._MAY_DIFFER)


def test_the_fast_path_is_taken_for_plain_data_and_not_where_output_may_differ(monkeypatch):
    seen: list[object] = []
    monkeypatch.setattr(module, "stable_hash", lambda value: seen.append(value) or stable_hash(value))
    data_hash({"b": [1, "é\n", True], "a": 2.5})
    assert seen == []
    for differs in ({"x": math.nan}, [1e-05], {"k": None}, {1: "a"}, [2**64], ["\ud800"], "text"):
        data_hash(differs)
    assert len(seen) == 7


def test_types_orjson_writes_its_own_way_go_to_the_plain_path():
    @dataclasses.dataclass
    class Point:
        x: int

    class Name(str):
        pass

    for value in ([Point(1)], {"at": datetime.datetime(2024, 1, 1)}, [Name("n")]):
        assert data_hash(value) == stable_hash(value)


def test_without_orjson_it_is_stable_hash(monkeypatch):
    monkeypatch.setattr(module, "_dumps", None)
    assert data_hash({"a": [1, 2.5e-7]}) == stable_hash({"a": [1, 2.5e-7]})
