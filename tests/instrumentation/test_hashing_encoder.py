"""The hash's prebuilt C encoder writes exactly what ``json.dumps`` with the canonical options writes."""

from __future__ import annotations

import json

import pytest

from mast_otel.wire.hashing import _default, canonical_json
from mast_otel.instrumentation.tools import safe_hash


class _Plain:
    def __init__(self) -> None:
        self.b, self.a = [1, 2], "x"


VALUES = [
    1, -0.0, 2.5, 1e300, float("inf"), float("nan"), None, True, 12345678901234567890, "plain text\n\u2028é",
    [1, "a", None, (2, 3)], {"b": {"d": 1, "c": [{"z": 1, "y": 2}]}, "a": "é"}, {1: "int keys", 2: "sort"},
    {"tags": {"z", "x", "y"}}, b"\x00\xff", _Plain(), '{"b": 1, "a": [1, 2]}',
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_canonical_json_matches_the_reference_encoder(value):
    parsed = json.loads(value) if isinstance(value, str) and value.startswith("{") else value
    reference = json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)
    assert canonical_json(value) == reference


def test_values_that_cannot_be_encoded_give_no_hash():
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(TypeError):
        canonical_json({1: "a", "b": 2})  # keys that cannot be sorted together
    assert safe_hash(cycle) is None and safe_hash({1: "a", "b": 2}) is None
