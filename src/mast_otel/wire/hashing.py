"""Stable content hashes for tool arguments and results.

The same value hashes the same across runs, processes and machines, so repetition can be
detected with message content capture off. Both the instrumentation (which records
``mast.tool.args_hash``) and the processor (which derives it from captured content when an
emitter did not) use this one function.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

HASH_HEX_CHARS = 16  # 64 bits: collisions are irrelevant at the scale of one run


def _default(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return value.hex()
    if hasattr(value, "model_dump"):  # pydantic models
        return value.model_dump()
    if hasattr(value, "__dict__"):
        return vars(value)
    return repr(value)


# Built once: json.dumps with non-default options would build an encoder on every call, and
# even a kept JSONEncoder builds its C encoder anew on each encode; the C encoder itself is
# made once here (no circular-reference map: a cycle ends in RecursionError instead of
# ValueError). Same output as the JSONEncoder, which remains the fallback without the C module.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)  # json's own, undeclared; None without its C module
_C_CANONICAL = (
    _c_make_encoder(None, _default, json.encoder.encode_basestring, None, ":", ",", True, False, True)
    if _c_make_encoder is not None else None
)
_encode_text = json.encoder.encode_basestring  # what JSONEncoder(ensure_ascii=False).encode does for a str
# How a JSON document can start; other text is not JSON, which is known without parsing it.
_JSON_FIRST_CHARS = frozenset('{["-0123456789')
_JSON_WORDS = ("true", "false", "null", "NaN", "Infinity")  # Python's json also reads NaN, Infinity


def may_be_json(text: str) -> bool:
    """Whether ``text`` may be a JSON document (as Python's json reads one, NaN and Infinity
    included); ``False`` says ``json.loads`` would fail on it."""
    if text[:1].isspace():
        text = text.lstrip()
    return text[:1] in _JSON_FIRST_CHARS or text.startswith(_JSON_WORDS)


def canonical_json(value: Any) -> str:
    """Key-sorted, whitespace-free JSON; non-JSON values fall back to a stable form."""
    if isinstance(value, str):
        # A JSON-encoded string (as tool arguments often arrive) hashes like the value it holds.
        if not may_be_json(value):
            return _encode_text(value)
        try:
            value = json.loads(value)
        except ValueError:
            return _encode_text(value)
    if _C_CANONICAL is not None:
        return "".join(_C_CANONICAL(value, 0))
    return _CANONICAL.encode(value)


def stable_hash(value: Any) -> str:
    """A short hex digest of ``value``'s canonical JSON form."""
    digest = hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()
    return digest[:HASH_HEX_CHARS]
