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
from typing import Callable, cast

_sizeof = sys.getsizeof


def held_bytes(value: object) -> int:
    """Bytes held by a value built of strings, bytes, numbers, tuples, lists, dicts and slotted
    dataclasses (what a decoded span carries besides its fixed fields)."""
    kind = type(value)
    if kind is str:  # the usual case first
        return _sizeof(value)
    if kind is tuple:
        return _sizeof(value) + sum(map(held_bytes, cast(tuple, value))) if value else 0  # the empty tuple is shared
    if value is None or value is True or value is False:
        return 0
    if isinstance(value, (str, bytes, int, float)):
        return _sizeof(value)
    if isinstance(value, (tuple, list, set, frozenset)):
        return _sizeof(value) + sum(map(held_bytes, value))
    if isinstance(value, dict):
        return _sizeof(value) + sum(map(held_bytes, value.keys())) + sum(map(held_bytes, value.values()))
    if is_dataclass(value):
        return _sizeof(value) + sum(held_bytes(getattr(value, f.name)) for f in fields(value))
    return _sizeof(value)


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
