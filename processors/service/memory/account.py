"""One memory account in bytes for everything the processor holds on behalf of its senders.

Each holder keeps its own count where it already keeps its data (the assembler its buffers
and retained runs, the receivers their request bodies, each queue its items) and registers a
reader here; admission adds them up per request, so the hot path pays one integer addition
per span and nothing per read. ``assembly.max_buffered_bytes`` is the budget: ingest is
refused (429 / RESOURCE_EXHAUSTED with a retry hint) once the sum reaches it, and
``mast_buffered_bytes`` reports the sum.

A buffered span received in up to 4 KiB is charged its serialized size (its strings cannot be
longer); a larger one what Python holds for its strings and containers (``sys.getsizeof``: a
string of ASCII text costs a byte per character, one with a character past U+FFFF four), see
``assembler.span_bytes``.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import fields, is_dataclass
from itertools import chain
from operator import attrgetter
from typing import Callable, cast

_sizeof = sys.getsizeof


def held_bytes(value: object) -> int:
    """Bytes held by a value built of strings, bytes, numbers, tuples, lists, dicts and slotted
    dataclasses (what a decoded span carries besides its fixed fields). A dataclass field whose
    metadata says it holds what the other fields hold (``model.HELD_ELSEWHERE``: a cache) is left out."""
    kind = type(value)
    if kind is str:  # the usual case first
        return _sizeof(value)
    if kind is tuple:
        if not value:
            return 0  # the empty tuple is shared
        flat = _texts_bytes(cast(tuple, value))
        return _sizeof(value) + (flat if flat >= 0 else _items_bytes(cast(tuple, value)))
    if value is None or value is True or value is False:
        return 0
    if kind is list:  # the exact types next, each as its general case below reads it
        return _sizeof(value) + _items_bytes(cast(list, value))
    if kind is dict:
        return _sizeof(value) + _dict_bytes(cast(dict, value))
    if kind is int or kind is float:
        return _sizeof(value)
    if isinstance(value, (str, bytes, int, float)):
        return _sizeof(value)
    if isinstance(value, (tuple, list, set, frozenset)):
        return _sizeof(value) + sum(map(held_bytes, value))
    if isinstance(value, dict):
        return _sizeof(value) + sum(map(held_bytes, value.keys())) + sum(map(held_bytes, value.values()))
    read = _FIELDS.get(kind)
    if read is None and is_dataclass(value):
        if isinstance(value, type):  # a dataclass itself, not one of its instances
            return _sizeof(value) + sum(held_bytes(getattr(value, f.name)) for f in fields(value))
        # fields() is slow to ask every time; a field caching what others hold is not counted again
        read = _FIELDS[kind] = _fields_reader(tuple(f.name for f in fields(value) if f.metadata.get("held") != "elsewhere"))
    if read is not None:
        return _sizeof(value) + _items_bytes(read(value))
    return _sizeof(value)


def _items_bytes(items: tuple | list) -> int:
    """``held_bytes`` of each of ``items``, added up: strings, numbers, ``None`` and booleans (a
    diagnosis's and a finding's fields, mostly) counted here, without a call each."""
    total = 0
    for item in items:
        kind = type(item)
        if kind is str or kind is int or kind is float:
            total += _sizeof(item)
        elif item is not None and kind is not bool:
            total += held_bytes(item)
    return total


_NONE_BYTES = _sizeof(None)
_TEXT_TYPES = frozenset({str, type(None)})


def _texts_bytes(items: tuple | list) -> int:
    """What ``held_bytes`` counts for the items of a container holding only strings and ``None``
    (a span's finish reasons, a tool exchange), read in C; -1 when it holds anything else."""
    if not _TEXT_TYPES.issuperset(map(type, items)):
        return -1
    return sum(map(_sizeof, items)) - _NONE_BYTES * items.count(None)


def _dict_bytes(value: dict) -> int:
    """``held_bytes`` of a dict's keys and values. A span's tool exchanges (call id -> a tuple of
    strings and ``None``), the usual large dict, are read in C, each part as the general path reads it."""
    keys = _texts_bytes(list(value))
    if keys < 0:
        keys = sum(map(held_bytes, value.keys()))
    items = value.values()
    if items and _TUPLES.issuperset(map(type, items)) and all(items):  # non-empty tuples only (the empty one is shared)
        flat = _texts_bytes(list(chain.from_iterable(items)))
        if flat >= 0:
            return keys + sum(map(_sizeof, items)) + flat
    return keys + sum(map(held_bytes, items))


_TUPLES = frozenset({tuple})


def _fields_reader(names: tuple[str, ...]) -> Callable[[object], tuple]:
    """A dataclass's fields as one tuple, read in C."""
    if len(names) >= 2:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda value: (one(value),)
    return lambda value: ()


_FIELDS: dict[type, Callable[[object], tuple]] = {}  # a dataclass -> the reader of its fields


class Charge:
    """A byte count one holder keeps current from any thread (queues, receivers)."""

    __slots__ = ("name", "held", "_lock")

    def __init__(self, name: str) -> None:
        self.name = name
        self.held = 0
        self._lock = threading.Lock()

    def add(self, nbytes: int) -> None:
        with self._lock:
            self.held += nbytes

    def __call__(self) -> int:
        return self.held


class MemoryAccount:
    """The sum of what every registered holder holds, against one budget in bytes."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._readers: dict[str, Callable[[], int]] = {}

    def register(self, name: str, read: Callable[[], int]) -> None:
        """``read()`` returns what ``name`` holds now (cheap: called on each admission)."""
        self._readers[name] = read

    def charge(self, name: str) -> Charge:
        """A new :class:`Charge`, registered under ``name``."""
        charge = Charge(name)
        self.register(name, charge)
        return charge

    def held(self) -> int:
        return sum(read() for read in self._readers.values())

    def by_holder(self) -> dict[str, int]:
        return {name: read() for name, read in self._readers.items()}

    def room(self) -> int:
        """Bytes left before the budget (negative once over it)."""
        return self.budget - self.held()

    def over(self) -> bool:
        return self.held() >= self.budget
