"""How a derived value was obtained, recorded where it was set (``Span.derived``, ``RunHints.derived``)."""

from __future__ import annotations

from typing import Any


def note(target: Any, field: str, how: str) -> None:
    """Record that ``field`` of ``target`` (a ``Span`` or ``RunHints``) was derived, and how;
    the first derivation of a field is the one kept. A new dict, never a change to the one there:
    a span's state as it arrived shares that dict (``model.arrived_state``)."""
    derived = target.derived
    if derived is None:
        target.derived = {field: how}
    elif field not in derived:
        target.derived = {**derived, field: how}
