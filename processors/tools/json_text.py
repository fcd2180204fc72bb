"""JSON text read by orjson where it gives what the standard ``json`` module gives, by ``json`` elsewhere.

Content values arrive as JSON text (a model call's messages, a tool's arguments and result) and
are read on every span, so the shortcuts path reads them with orjson, about twice as fast. The
two disagree only where orjson refuses what ``json`` reads (NaN and Infinity, numbers beyond a
double's range, lone surrogates, nesting past orjson's limit) or reads an integer otherwise (one
beyond 64 bits becomes a float; nesting ``json`` refuses for want of stack, orjson reads): orjson's
refusal hands the text to ``json``, and a text with a run of 19 digits (the shortest integer that
may not fit in 64 bits) or with more than 256 opening brackets, counted anywhere, even in a string,
goes to ``json`` without asking orjson. Everything else (duplicate keys, the last one
winning; escapes; whitespace; floats, rounded correctly by both) reads the same, so
:func:`loads` returns ``json.loads``'s value or raises its error.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from mast_otel.wire.hashing import may_be_json

_fast_loads: Callable[[bytes], Any] | None
_JSON_ERROR: type[ValueError]  # orjson's decode error is a ValueError
try:  # the processor's install carries orjson; the agent side's (guards, instrumentation) need not
    import orjson

    _fast_loads, _JSON_ERROR = orjson.loads, orjson.JSONDecodeError
except ImportError:
    _fast_loads, _JSON_ERROR = None, ValueError

__all__ = ["loads", "may_be_json"]

# Every byte to a space but digits, to "0", and opening brackets, to "[": a run of 19 digits becomes
# 19 zeros, and one count finds the brackets of both kinds (one pass over the text for both checks).
_MARKS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x5B if byte in b"[{" else 0x20 for byte in range(256))
_LONG_NUMBER = b"0" * 19  # 10**18, with 19 digits, is the least that may not fit: 2**63 - 1 is 9.2e18
# json fails on nesting deeper than the interpreter's recursion limit leaves it room for (about a
# thousand less the caller's depth), orjson past 1024: a text that may nest deeper than this goes to json.
_MAX_BRACKETS = 256


def loads(text: str) -> Any:
    """``json.loads(text)``: its value, or its error."""
    if _fast_loads is None:
        return json.loads(text)
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a lone surrogate, which only json reads
        return json.loads(text)
    marks = data.translate(_MARKS)
    if _LONG_NUMBER in marks or (len(data) > 2 * _MAX_BRACKETS and marks.count(b"[") > _MAX_BRACKETS):
        return json.loads(text)
    try:
        return _fast_loads(data)
    except _JSON_ERROR:
        return json.loads(text)  # json's value where orjson refuses, or json's own error
