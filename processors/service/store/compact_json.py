"""Compact JSON text for what the store writes, the same bytes as
``json.dumps(value, separators=(",", ":"))``, written by orjson where it gives those bytes.

The store writes every run's step list, findings and metric accounting as JSON on the sweeper
thread; with the standard encoder that was the largest part of storing a diagnosis (its cost is
per value, and a step list holds hundreds). orjson writes the same text many times faster,
except in these cases, where the standard encoder writes it:

- text with non-ASCII characters or DEL: the standard encoder escapes them (``ensure_ascii``),
  orjson writes them as they are;
- what orjson refuses: integers beyond 64 bits, lone surrogates, tuple subclasses
  (``NamedTuple``), types neither knows.

Floats are the callers' business: both write the shortest repr, but they differ below 1e-4
(``1e-05`` against ``0.00001``) and for NaN and infinities, so a value holding floats goes
through :func:`dumps` only when :func:`plain_float` holds for each of them.
Dataclasses are written as objects of their fields in declaration order by both.
"""

from __future__ import annotations

import dataclasses
import json

import orjson


def _fields(value: object) -> dict[str, object]:
    """The standard encoder's ``default``: a dataclass as orjson writes it, field by field."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# Built once: json.dumps with separators builds an encoder per call. The values are trees.
_standard = json.JSONEncoder(separators=(",", ":"), check_circular=False, default=_fields).encode


def plain_float(value: float) -> bool:
    """Whether orjson writes ``value`` as the standard encoder does: zero, or finite with a
    magnitude in [1e-4, 1e16) (where both write it without an exponent, or both with one)."""
    return value == 0 or 1e-4 <= abs(value) < 1e16


def dumps(value: object) -> str:
    """``value`` as compact JSON text, identical to the standard encoder's (floats: see the module)."""
    try:
        text = orjson.dumps(value).decode()  # UTF-8; a str knows whether it is all ASCII, bytes must look
    except TypeError:
        return _standard(value)
    if text.isascii() and "\x7f" not in text:
        return text
    return _standard(value)
