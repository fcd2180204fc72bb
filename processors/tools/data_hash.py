"""``stable_hash`` of plain data, with the canonical text written by orjson where it is the same.

Content hashes are stored and compared across builds and replicas, so this gives
:func:`~mast_otel.wire.hashing.stable_hash`'s digest exactly, only sooner: orjson writes key-sorted,
whitespace-free JSON about three times as fast as the standard encoder. Where the two could write
different bytes, the plain path is taken:

- what orjson refuses (it raises): a key that is not a ``str``, an integer beyond 64 bits, a lone
  surrogate, nesting past its limit, a subclass, dataclass or datetime (passed through to a
  ``default`` there is none of), bytes, sets and any other type of its own;
- what it writes otherwise: NaN and the infinities (``null``, where ``json`` writes ``NaN`` and
  ``Infinity``) and floats below 1e-4 (``0.00001`` or ``1e-8`` where ``json`` writes ``1e-05``
  and ``1e-08``), found in its output as ``null``, ``0.0000`` or ``e-`` (anywhere, strings
  included, which only sends more values to the plain path).

Other floats, integers, escapes (``json`` with ``ensure_ascii=False`` and orjson both escape
only the quote, the backslash and control characters, the same way) and the order of keys (code
points; UTF-8 bytes sort the same) are written alike. orjson also writes enums, UUIDs and numpy
arrays its own way, so only plain data is given here: values parsed from text (JSON or a Python
literal) or that ``marshal`` writes (exact built-in types), and what ``tools.values.canonical``
selects from them. The processor's install carries orjson; without it this is ``stable_hash``.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable

from mast_otel.wire.hashing import HASH_HEX_CHARS, stable_hash

_dumps: Callable[..., bytes] | None
_ERROR: type[TypeError]  # orjson's encode error is a TypeError
try:
    import orjson

    _dumps, _ERROR, _OPTIONS = orjson.dumps, orjson.JSONEncodeError, (
        orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS
        | orjson.OPT_PASSTHROUGH_DATETIME)
except ImportError:
    _dumps, _ERROR, _OPTIONS = None, TypeError, 0

_MAY_DIFFER = (b"null", b"0.0000", b"e-")  # see the module docstring


def data_hash(value: Any) -> str:
    """``stable_hash(value)`` for plain data (see the module docstring)."""
    kind = type(value)
    if _dumps is None or (kind is not dict and kind is not list):  # a text is parsed first by canonical_json
        return stable_hash(value)
    try:
        text = _dumps(value, option=_OPTIONS)
    except _ERROR:
        return stable_hash(value)
    if _MAY_DIFFER[0] in text or _MAY_DIFFER[1] in text or _MAY_DIFFER[2] in text:
        return stable_hash(value)
    return hashlib.sha256(text).hexdigest()[:HASH_HEX_CHARS]
