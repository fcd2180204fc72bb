"""Content values read once per request, not once per place they show.

A model call's messages carry every earlier tool exchange of its run again, and a tool span's own
arguments and result are the same texts once more, so one request holds the same content values
many times over (in the recorded corpora, three of five hashed values are repeats within their
request), and the hash and the failure reading of one tool result each parsed it (JSON, or a
Python literal through ``ast``). While the decoder holds a memo (:func:`remembering`, taken only
with ``DecodeOptions(fast=True)``), a text is parsed once, and its canonical hash and its failure
reading are worked out the first time and looked up after, until the request is decoded; with no
memo (the plain path, the pure ``normalize`` API) each is worked out afresh. The answers are the
same: both are pure functions of the value, both begin by parsing it (``tools.values.parsed``),
and neither writes into what was parsed, which the two share.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.tools.values import canonical, error_in, parsed

MAX_VALUES = 4096  # per memo; past it the memo starts over rather than grow


class _Memo:
    __slots__ = ("hashes", "failures", "values")

    def __init__(self) -> None:
        self.hashes: dict[str, str] = {}
        self.failures: dict[str, str | None] = {}
        self.values: dict[str, Any] = {}  # text -> what ``parsed`` made of it


def _value_of(text: str, memo: _Memo) -> Any:
    """What the functions of a text read: the text parsed once, when that gave a structure;
    else the text itself (a JSON string literal parses to a text they would parse again)."""
    values = memo.values
    value = values.get(text, _MISSING)
    if value is _MISSING:
        if len(values) >= MAX_VALUES:
            values.clear()
        value = values[text] = parsed(text)
    return text if type(value) is str else value


_MISSING = object()


_CURRENT: ContextVar[_Memo | None] = ContextVar("mast_otel_content_memo", default=None)


@contextmanager
def remembering(enabled: bool = True) -> Iterator[None]:
    """Within the block (one request's decoding), text values are read once; a block inside
    another keeps the outer memo. ``enabled=False`` reads every value afresh."""
    if enabled and _CURRENT.get() is not None:
        yield
        return
    token = _CURRENT.set(_Memo() if enabled else None)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def content_hash(value: Any) -> str:
    """``stable_hash(canonical(value))``, once per distinct text while a memo is held."""
    memo = _CURRENT.get()
    if memo is None or type(value) is not str:
        return stable_hash(canonical(value))
    hashes = memo.hashes
    found = hashes.get(value)
    if found is None:
        if len(hashes) >= MAX_VALUES:
            hashes.clear()
        found = hashes[value] = stable_hash(canonical(_value_of(value, memo)))
    return found


def failure_in(value: Any) -> str | None:
    """``error_in(value)``, once per distinct text while a memo is held."""
    memo = _CURRENT.get()
    if memo is None or type(value) is not str:
        return error_in(value)
    failures = memo.failures
    if value in failures:
        return failures[value]
    if len(failures) >= MAX_VALUES:
        failures.clear()
    found = failures[value] = error_in(_value_of(value, memo))
    return found
