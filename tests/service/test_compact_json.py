"""The store's JSON text is the standard encoder's, byte for byte, whichever encoder wrote it:
stores written before and after orjson wrote it hold the same rows."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

from hypothesis import example, given
from hypothesis import strategies as st

from mast_otel.processors.model import Finding
from mast_otel.processors.service.store.compact_json import dumps, plain_float
from mast_otel.processors.service.store.run_steps import RunStep, parse_steps, steps_json
from mast_otel.processors.service.store.diagnoses import _findings_json


def standard(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


# Every character range where the encoders could differ: ASCII controls, DEL, non-ASCII, astral.
text = st.text(alphabet=st.characters(codec="utf-8", min_codepoint=0, max_codepoint=0x1F6FF), max_size=12)
plain_floats = st.floats(allow_nan=False, allow_infinity=False).filter(plain_float)
scalars = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | plain_floats | text


def containers(inner: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple) | st.dictionaries(text, inner, max_size=4)


values = st.recursive(scalars, containers, max_leaves=20)


@given(values)
@example("rm -rf\x7f")  # ASCII, but escaped by the standard encoder only
@example({"agent": "équipe", "steps": [1, None, True]})
@example([2**64, -(2**63) - 1, "\ud800"])  # beyond orjson: big integers, a lone surrogate
def test_plain_values_are_written_as_the_standard_encoder_writes_them(value) -> None:
    assert dumps(value) == standard(value)


@given(st.floats())
def test_plain_float_admits_only_floats_both_encoders_write_alike(value) -> None:
    if plain_float(value):
        assert dumps(value) == standard(value)
    else:
        assert value != 0 and (not math.isfinite(value) or abs(value) < 1e-4 or abs(value) >= 1e16)


def test_floats_outside_the_plain_range_are_written_differently_by_orjson() -> None:
    """Why ``plain_float`` exists: this is the case it keeps away from orjson."""
    import orjson

    assert not plain_float(1e-05) and orjson.dumps(1e-05).decode() != standard(1e-05)


@dataclass(frozen=True, slots=True)
class Pair:
    name: str
    count: int


def test_dataclasses_are_written_field_by_field_by_both_encoders() -> None:
    for value in (Pair("plain", 2), Pair("café", 3), Pair("del\x7f", 4)):  # the last two: the standard encoder
        assert dumps([value]) == standard([{"name": value.name, "count": value.count}])


def test_named_tuples_and_big_integers_fall_back_to_the_standard_encoder() -> None:
    step = RunStep("a1", None, "tool", "search", 1, 2)
    assert dumps([step]) == standard([step])
    assert dumps([2**64, -(2**63) - 1]) == standard([2**64, -(2**63) - 1])


def finding(confidence: float, explanation: str = "agent 'x' looped") -> Finding:
    return Finding("FM-1.3", confidence, explanation, ("s1", "s2"), span_id="s1", detector="repetition")


def test_findings_text_matches_the_standard_encoder_for_any_confidence() -> None:
    for confidence in (0.9, 0.0, 1e-05, float("nan"), 1.0):
        for explanation in ("plain words", "l'agent « ops » a bouclé"):
            findings = [finding(confidence, explanation), finding(0.5)]
            expected = standard([{name: getattr(f, name) for name in Finding.__dataclass_fields__} for f in findings])
            assert _findings_json(findings) == expected
    assert _findings_json([]) == "[]"


def test_confidence_is_the_only_float_a_finding_holds() -> None:
    """``_findings_json`` checks only the confidence: a new float field must be checked too."""
    assert [f.name for f in dataclasses.fields(Finding) if "float" in str(f.type)] == ["confidence"]


def test_step_lists_keep_their_text_and_read_back() -> None:
    steps = [
        RunStep("a1", None, "agent", "invoke_agent ops", 10, 90, agent="ops", budget=30, constraints=("read_only",),
                termination_reason="final_answer"),
        RunStep("t1", "a1", "tool", "execute_tool kubectl", 20, 30, step_index=1, tool_name="kubectl", tool_kind="read",
                error="TimeoutError", verification_passed=False, interventions=(("loop", "FM-1.3", "observe", "FM-1.3"),)),
        RunStep("l1", "a1", "llm", "chat modèle", 40, 50, model="gpt-4o", input_message_count=3,
                requested_tools=("kubectl", "grep")),
    ]
    text = steps_json(steps)
    assert text == standard({"fields": RunStep._fields, "rows": steps})
    assert parse_steps(text) == steps
