"""A run's normalized spans as JSON text and back, for the shared store.

When the gateway re-routes a run, its later spans reach another replica; that replica reads
the spans the first one stored and diagnoses the whole run. JSON (not pickle): the database
is shared, and what is read from it must never run code.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from typing import Iterable

import orjson

from mast_otel.processors.model import GuardIntervention, Role, RunHints, Span

_TUPLES = ("finish_reasons", "requested_tools", "answer_tools")
_FIELDS = tuple(f.name for f in dataclasses.fields(Span))
_values = attrgetter(*_FIELDS)  # a span's fields as one tuple, read in C


def spans_json(spans: Iterable[Span]) -> str:
    """The field names once, then one array of values per span (most are null: a span fills few
    of its fields, and naming each in every span would make the text several times longer)."""
    return orjson.dumps({"fields": _FIELDS, "rows": [_values(s) for s in spans]}).decode()


def parse_spans(text: str) -> list[Span]:
    """Spans ``spans_json`` wrote, read by field name (fields this version does not know are ignored)."""
    data = orjson.loads(text)
    names = data["fields"]
    known = [(i, name) for i, name in enumerate(names) if name in _KNOWN]
    return [_span({name: row[i] for i, name in known}) for row in data["rows"]]


_KNOWN = frozenset(_FIELDS)


def _span(item: dict) -> Span:
    item["role"] = Role(item["role"])
    for name in _TUPLES:
        item[name] = tuple(item.get(name) or ())
    hints = item.get("hints")
    if hints is not None:
        hints["constraints"] = tuple(hints.get("constraints") or ())
        if hints.get("allowed_tools") is not None:
            hints["allowed_tools"] = tuple(hints["allowed_tools"])
        item["hints"] = RunHints(**hints)
    if item.get("tool_exchanges") is not None:
        item["tool_exchanges"] = {k: tuple(v) for k, v in item["tool_exchanges"].items()}
    item["guard_interventions"] = tuple(
        GuardIntervention(**{**g, "evidence_span_ids": tuple(g.get("evidence_span_ids") or ())})
        for g in item.get("guard_interventions") or ())
    return Span(**item)


