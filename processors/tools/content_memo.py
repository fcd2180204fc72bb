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
and neither writes into what was parsed, which the two share. A structured value (the arguments a
model call's messages hold, parsed anew on every call of the run) is hashed once per distinct
value: it is known by its ``marshal`` bytes, which only Python's own exact types have (anything
else is hashed afresh) and which differ between values that differ (``1``, ``1.0`` and ``True``
included), so a value found there is the value that was hashed. (marshal writes a ``bytearray``
or ``memoryview`` as it writes ``bytes``, which hash apart; the decoders make neither: OTLP's
bytes are ``bytes``, JSON has none.)

A run's diagnosis holds a memo of its own (``derive_hints`` and ``diagnose`` on a run with
``Run.shortcuts``; the service's rule stage around both): hint derivation and the detectors read
the same tool results and final answers again (a failure reading, a near-repeat's request, the
limit and claim phrases several of them look for), and each is read once per run through
:func:`parsed_value`, :func:`failure_in` and :func:`scanned`.
"""

from __future__ import annotations

import marshal
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Hashable, Iterator, TypeVar

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.tools.values import canonical, canonical_spelled, error_in, read_text, without_bare_text

T = TypeVar("T")

MAX_VALUES = 4096  # per memo; past it the memo starts over rather than grow


class _Memo:
    __slots__ = ("hashes", "structured", "failures", "values", "joined", "scans", "kept")

    def __init__(self) -> None:
        self.hashes: dict[str, str | None] = {}
        self.structured: dict[bytes, str | None] = {}  # a structured value's marshal bytes -> its hash
        self.failures: dict[tuple[str, bool], str | None] = {}  # (text, bare_text) -> error_in's answer
        self.values: dict[str, Any] = {}  # text -> what ``parsed`` made of it
        self.joined: set[str] = set()  # texts of those ``ast`` read (which may spell a key in pieces)
        self.scans: dict[tuple[Hashable, str], Any] = {}  # (what read it, text) -> what was read
        self.kept: dict[Hashable, dict[Any, Any]] = {}  # a reader's own store (see :func:`kept`)


def _value_of(text: str, memo: _Memo) -> Any:
    """What the functions of a text read: the text parsed once, when that gave a structure;
    else the text itself (a JSON string literal parses to a text they would parse again)."""
    values = memo.values
    value = values.get(text, _MISSING)
    if value is _MISSING:
        if len(values) >= MAX_VALUES:
            values.clear()
            memo.joined.clear()
        value, by_ast = read_text(text)
        values[text] = value
        if by_ast:
            memo.joined.add(text)
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


def held() -> bool:
    """Whether a memo is held: the shortcuts path (``DecodeOptions(fast=True)``, ``Run.shortcuts``),
    on which the normalizers take their own shortcuts too (each with the plain path's result)."""
    return _CURRENT.get() is not None


def content_hash(value: Any) -> str | None:
    """``stable_hash(canonical(value))``, once per distinct text while a memo is held; ``None`` for
    a value JSON cannot encode (see :func:`_hash`)."""
    memo = _CURRENT.get()
    if memo is None:
        return _hash(canonical, value)
    if type(value) is not str:
        return _structured_hash(value, memo)
    hashes = memo.hashes
    found = hashes.get(value)
    if found is None:
        if len(hashes) >= MAX_VALUES:
            hashes.clear()
        read = _value_of(value, memo)
        found = hashes[value] = _hash(canonical_spelled, read, None if value in memo.joined else value)
    return found


def _hash(make_canonical: Callable[..., Any], *args: Any) -> str | None:
    """The stable hash of a canonical value, or ``None`` when JSON cannot encode it: map keys it
    cannot sort together or write (a Python literal's ``{1: 'a', 'b': 2}``, a tuple as a key), or
    nesting deeper than the interpreter's stack lets ``json`` read or write. The instrumentation
    records no hash for such a value either (the same three errors); before, it failed the whole
    request."""
    try:
        return stable_hash(make_canonical(*args))
    except (TypeError, ValueError, RecursionError):
        return None


def _structured_hash(value: Any, memo: _Memo) -> str | None:
    """A value that is no text: hashed once per distinct value (known by its marshal bytes)."""
    try:
        key = marshal.dumps(value, 0)  # (version 0: no references, so a value's bytes never depend on what it shares)
    except ValueError:  # a type marshal does not write (a class of the caller's), or nested too deep
        return _hash(canonical, value)
    structured = memo.structured
    found = structured.get(key)
    if found is None:
        if len(structured) >= MAX_VALUES:
            structured.clear()
        found = structured[key] = _hash(canonical_spelled, value, key)
    return found


def failure_in(value: Any, *, bare_text: bool = False) -> str | None:
    """``error_in(value, bare_text=...)``, once per distinct text while a memo is held."""
    memo = _CURRENT.get()
    if memo is None or type(value) is not str:
        return error_in(value, bare_text=bare_text)
    failures, key = memo.failures, (value, bare_text)
    if key in failures:
        return failures[key]
    if len(failures) >= MAX_VALUES - 1:
        failures.clear()
    # both readings from one: they differ only where bare text alone reads as a failure (``without_bare_text``)
    bare = failures[(value, True)] = error_in(_value_of(value, memo), bare_text=True)
    plain = failures[(value, False)] = without_bare_text(bare)
    return bare if bare_text else plain


def parsed_value(value: Any) -> Any:
    """What a function that begins with ``parsed(value)`` may be given instead of ``value``: the
    text parsed once while a memo is held; else ``value`` itself (parsed again by the caller)."""
    memo = _CURRENT.get()
    if memo is None or type(value) is not str:
        return value
    return _value_of(value, memo)


def scanned(reader: Hashable, text: str, read: Callable[[str], T]) -> T:
    """``read(text)``, once per (``reader``, text) while a memo is held. ``reader`` names the pure
    function ``read`` is (its patterns and how far it reads) and must differ for any other."""
    memo = _CURRENT.get()
    if memo is None:
        return read(text)
    scans, key = memo.scans, (reader, text)
    found = scans.get(key, _MISSING)
    if found is _MISSING:
        if len(scans) >= MAX_VALUES:
            scans.clear()
        found = scans[key] = read(text)
    return found


def kept(reader: Hashable) -> dict[Any, Any] | None:
    """A store of ``reader``'s own for as long as the memo is held (one request's decoding), for what
    it worked out and may build on (it keeps the store bounded); ``None`` while no memo is held."""
    memo = _CURRENT.get()
    if memo is None:
        return None
    store = memo.kept.get(reader)
    if store is None:
        store = memo.kept[reader] = {}
    return store
