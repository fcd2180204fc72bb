"""A span's state as it arrived (``model.arrived_state``) and the copies it and ``as_arrived`` make
are made from the classes' field names (``model._slot_copier``, ``_read_writes``); they must read,
copy and restore every field exactly as reading each field by name does, for any field values, including
fields added to ``Span`` or ``RunHints`` later."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from mast_otel.processors import model
from mast_otel.processors.model import RunHints, Span, arrived_state, as_arrived

SPAN_FIELDS = [f.name for f in dataclasses.fields(Span)]
HINT_FIELDS = [f.name for f in dataclasses.fields(RunHints)]


def _filled(cls: type, names: list[str], draw_value) -> object:
    """An instance whose every field holds its own object (identity tells a copy from a mix-up)."""
    obj = object.__new__(cls)
    for name in names:
        setattr(obj, name, draw_value(name))
    return obj


values = st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2))


@settings(max_examples=150, deadline=None)
@given(st.data(), st.booleans())
def test_state_and_copies_match_reading_each_field_by_name(data, with_hints):
    hints = _filled(RunHints, HINT_FIELDS, lambda name: data.draw(values, name)) if with_hints else None
    span = _filled(Span, SPAN_FIELDS, lambda name: hints if name == "hints" else data.draw(values, name))

    state = arrived_state(span)
    assert len(state) == len(model._DIAGNOSIS_WRITES)
    for name, kept in zip(model._DIAGNOSIS_WRITES, state):
        if name == "hints":
            assert (kept is None) == (hints is None)
            if hints is not None:  # a copy: the diagnosis changes hints in place
                assert kept is not hints
                assert all(getattr(kept, n) is getattr(hints, n) for n in HINT_FIELDS)
        else:
            assert kept is getattr(span, name)

    copy = model._copy_span(span)
    assert copy is not span and all(getattr(copy, n) is getattr(span, n) for n in SPAN_FIELDS)

    changed = _filled(Span, SPAN_FIELDS, lambda name: object())  # what a diagnosis may have made of it
    for name in SPAN_FIELDS:
        if name not in model._DIAGNOSIS_WRITES:
            setattr(changed, name, getattr(span, name))
    restored = as_arrived(changed, state)
    for name in SPAN_FIELDS:
        if name == "hints":
            assert (restored.hints is None) == (hints is None)
            if hints is not None:
                assert restored.hints is not state[-1] and all(
                    getattr(restored.hints, n) is getattr(hints, n) for n in HINT_FIELDS)
        else:
            assert getattr(restored, name) is getattr(span, name)
