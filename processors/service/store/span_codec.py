"""A run's normalized spans as JSON text and back, for the shared store and sessions' turns.

When the gateway re-routes a run, its later spans reach another replica; that replica reads
the spans the first one stored and diagnoses the whole run. A session's turns are kept the same
way. JSON (not pickle): the database is shared, and what is read from it must never run code.

The text names the fields once and gives one array of values per span. Fields that no span
written so far has filled (content fields with content off, attributes a workload never sets)
are left out, and read back as their defaults; the fields without a default and ``role`` are
always written. Text written before fields were left out (every field named) reads the same way,
and a build that predates leaving them out reads the new text too: it fills what is not named
with the defaults, as this one does. Storing a turn costs the processor in proportion to its
length, and most of what was left out was ``null``.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Callable, Iterable, Mapping, NamedTuple, Sequence

import orjson

from mast_otel.processors.model import ARRIVED_FIELDS, ArrivedState, GuardIntervention, Role, RunHints, Span, as_arrived

_TUPLES = ("finish_reasons", "requested_tools", "answer_tools")
# (``result_reading`` is a reading kept for the diagnosis in this process, never written)
_SPAN_FIELDS = tuple(f for f in dataclasses.fields(Span) if f.name != "result_reading")
_FIELDS = tuple(f.name for f in _SPAN_FIELDS)


@lru_cache(maxsize=256)  # a layout only widens: a few dozen per process
def _rows_reader(names: tuple[str, ...]) -> Callable[[list[Span]], list[tuple]]:
    """A function giving each span's ``names`` as one tuple: the reads written out as one list
    comprehension (compiled once per layout, from ``Span``'s own field names), which CPython
    specializes for the slots; ``attrgetter`` looks every name up again per span, about three
    times the cost, and these reads were most of what encoding a turn cost the sweeper."""
    if not names:
        return lambda spans: [()] * len(spans)
    if not all(name in _FIELDS for name in names):
        raise ValueError(f"not Span fields: {sorted(set(names) - set(_FIELDS))}")
    source = f"def rows(spans):\n    return [({''.join(f's.{name}, ' for name in names)}) for s in spans]\n"
    namespace: dict[str, Callable[[list[Span]], list[tuple]]] = {}
    exec(compile(source, f"<span_codec rows of {len(names)} fields>", "exec"), namespace)  # noqa: S102  (field names only)
    return namespace["rows"]


_IN_STATE = {name: i for i, name in enumerate(ARRIVED_FIELDS)}


@lru_cache(maxsize=256)
def _arrived_rows_reader(names: tuple[str, ...]) -> Callable[[list[Span], Sequence[ArrivedState]], list[tuple]]:
    """``_rows_reader``'s rows of the spans as they arrived: the fields a diagnosis writes read
    from each span's ``ArrivedState`` (``model.arrived_states``, by position), the others from
    the span, as ``as_arrived`` copies would give them, without the copies."""
    if not names:
        return lambda spans, states: [()] * len(spans)
    if not all(name in _FIELDS for name in names):
        raise ValueError(f"not Span fields: {sorted(set(names) - set(_FIELDS))}")
    reads = "".join(f"a[{_IN_STATE[name]}], " if name in _IN_STATE else f"s.{name}, " for name in names)
    source = f"def rows(spans, states):\n    return [({reads}) for s, a in zip(spans, states, strict=True)]\n"
    namespace: dict[str, Callable[[list[Span], Sequence[ArrivedState]], list[tuple]]] = {}
    exec(compile(source, f"<span_codec arrived rows of {len(names)} fields>", "exec"), namespace)  # noqa: S102  (field names only)
    return namespace["rows"]


_DEFAULTS = {f.name: f.default for f in _SPAN_FIELDS}


@lru_cache(maxsize=256)  # a layout only widens: a few dozen per process
def _rows_if_unfilled(names: tuple[str, ...], others: tuple[str, ...]) -> Callable[[list[Span]], list[tuple] | None]:
    """A function giving each span's ``names`` as one tuple, or ``None`` when some span fills one
    of ``others`` (holds other than its default): one pass over the spans, each of ``others``
    compared as it is read (``is None`` for most), where reading ``others`` into tuples to compare
    them with the defaults' tuple was a pass of its own and about a sixth of encoding a turn."""
    if not all(name in _FIELDS for name in (*names, *others)):
        raise ValueError(f"not Span fields: {sorted({*names, *others} - set(_FIELDS))}")
    unfilled = " and ".join(f"s.{name} is None" if _DEFAULTS[name] is None else f"s.{name} == _{name}"
                            for name in others) or "True"
    source = (f"def rows(spans):\n    out = [({''.join(f's.{name}, ' for name in names)}) for s in spans if {unfilled}]\n"
              f"    return out if len(out) == len(spans) else None\n")
    namespace: dict[str, object] = {f"_{name}": _DEFAULTS[name] for name in others}
    exec(compile(source, f"<span_codec rows of {len(names)} fields>", "exec"), namespace)  # noqa: S102  (field names only)
    return namespace["rows"]  # type: ignore[return-value]


class _Layout(NamedTuple):
    """Which fields the text names: those always written and those some span has filled so far."""

    names: tuple[str, ...]  # written, in the span's field order
    values: Callable[[list[Span]], list[tuple]]  # each span's values of ``names``
    # the same, or None when a span fills a field not in ``names`` (the layout must widen)
    values_if_unfilled: Callable[[list[Span]], list[tuple] | None]
    arrived_values: Callable[[list[Span], Sequence[ArrivedState]], list[tuple]]  # ``values`` as the spans arrived
    arrived_unwritten: Callable[[list[Span], Sequence[ArrivedState]], list[tuple]]  # the other fields as they arrived
    defaults: tuple  # what ``arrived_unwritten`` gives for a span that fills none of them


def _layout(written: set[str]) -> _Layout:
    names = tuple(f.name for f in _SPAN_FIELDS if f.name in written)
    others = tuple(f.name for f in _SPAN_FIELDS if f.name not in written)
    return _Layout(names, _rows_reader(names), _rows_if_unfilled(names, others), _arrived_rows_reader(names),
                   _arrived_rows_reader(others), tuple(f.default for f in _SPAN_FIELDS if f.name not in written))


# written whatever they hold: the fields without a plain default, and role (read by name by
# builds before fields were left out)
_ALWAYS = frozenset({"role", *(f.name for f in _SPAN_FIELDS if f.default is dataclasses.MISSING)})


class SpanEncoder:
    """Writes spans as the field names once, then one array of values per span (naming each
    field in every span would make the text several times longer), without the fields no span
    it has written so far has filled. Its fields only widen (a few dozen at most); any thread."""

    def __init__(self) -> None:
        self._layout = _layout(set(_ALWAYS))

    def __call__(self, spans: Iterable[Span], links: Mapping[str, str | None] | None = None,
                 arrived: Sequence[ArrivedState] | None = None) -> str:
        """``links``: the parents of the run's spans that are not kept (``Run.from_spans``), so the
        replica that reads the spans back re-links its own steps below them too. ``arrived``: each
        span's ``ArrivedState`` (by position): the spans are written as they arrived, the same text
        as of their ``as_arrived`` copies."""
        spans = spans if isinstance(spans, list) else list(spans)
        layout = self._layout
        if arrived is None:
            rows = layout.values_if_unfilled(spans)
            widen = rows is None
        else:
            widen = layout.arrived_unwritten(spans, arrived).count(layout.defaults) != len(spans)  # one compare per span, in C
            if widen:  # rare (a layout only widens): read from copies, as the spans arrived
                spans, arrived = list(map(as_arrived, spans, arrived)), None
            else:
                rows = layout.arrived_values(spans, arrived)
        if widen:
            filled = {f.name for f in _SPAN_FIELDS if f.name not in layout.names
                      and any(getattr(s, f.name) != f.default for s in spans)}
            # another thread may have widened it meanwhile: both its fields and these are kept
            layout = self._layout = _layout({*layout.names, *self._layout.names, *filled})
            rows = layout.values(spans)
        doc: dict[str, object] = {"fields": layout.names, "rows": rows}
        if links:
            doc["links"] = links
        return orjson.dumps(doc).decode()


spans_json = SpanEncoder()  # the process's: what one run fills, the next of its kind fills too


def parse_spans(text: str) -> list[Span]:
    """Spans ``spans_json`` wrote, read by field name (fields this version does not know are
    ignored; fields not named take their defaults)."""
    return parse_run(text)[0]


def parse_run(text: str) -> tuple[list[Span], dict[str, str | None]]:
    """Spans ``spans_json`` wrote and the links written with them (empty: none, or text written
    before links were)."""
    data = orjson.loads(text)
    return _spans_reader(tuple(data["fields"]))(data["rows"]), dict(data.get("links") or {})


_KNOWN = frozenset(_FIELDS)


@lru_cache(maxsize=256)  # a layout only widens: a few dozen per process
def _spans_reader(names: tuple[str, ...]) -> Callable[[list[list]], list[Span]]:
    """A function making a ``Span`` of each row written under ``names``: one call each, its fields
    passed by keyword (the field's own name, written into the code: a name read from JSON is a new
    string, which the call would match by comparing it with each parameter's name in turn), each
    value as the span holds it (``_READS``), compiled once per layout as ``_rows_reader`` is. Names
    this version does not know are ignored, and a name written twice reads as its last value."""
    at = {name: i for i, name in enumerate(names) if name in _KNOWN}
    args = "".join(f"{name}={_READS.get(name, '{}').format(f'row[{i}]')}, " for name, i in at.items())
    source = f"def spans(rows):\n    return [Span({args}) for row in rows]\n"
    namespace: dict[str, Callable[[list[list]], list[Span]]] = {}
    exec(compile(source, f"<span_codec spans of {len(at)} fields>", "exec"),  # noqa: S102  (field names only)
         {"Span": Span, "_role": _role, "_hints": _hints, "_exchanges": _exchanges, "_guards": _guards}, namespace)
    return namespace["spans"]


def _role(value: str) -> Role:
    return _ROLES.get(value) or Role(value)  # Role(value) without the enum's call (an unknown value still raises)


def _hints(value: dict | None) -> RunHints | None:
    if value is None:
        return None
    value["constraints"] = tuple(value.get("constraints") or ())
    if value.get("allowed_tools") is not None:
        value["allowed_tools"] = tuple(value["allowed_tools"])
    return RunHints(**value)


def _exchanges(value: dict | None) -> dict[str, tuple[str | None, str | None, str | None]] | None:
    return {k: tuple(v) for k, v in value.items()} if value is not None else None


def _guards(value: list | None) -> tuple[GuardIntervention, ...]:
    return tuple(GuardIntervention(**{**g, "evidence_span_ids": tuple(g.get("evidence_span_ids") or ())})
                 for g in value) if value else ()


# How a value written as JSON is read back into the span's field, by field ("{}": the value as read).
_READS = {"role": "_role({})", "hints": "_hints({})", "tool_exchanges": "_exchanges({})",
          "guard_interventions": "_guards({})", **{name: "tuple({} or ())" for name in _TUPLES}}
_ROLES = {role.value: role for role in Role}
