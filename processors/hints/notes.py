"""How a derived value was obtained, recorded where it was set (``Span.derived``, ``RunHints.derived``)."""

from __future__ import annotations

from typing import Any


def note(target: Any, field: str, how: str) -> None:
    """Record that ``field`` of ``target`` (a ``Span`` or ``RunHints``) was derived, and how;
    the first derivation of a field is the one kept."""
    derived = target.derived
    if derived is None:
        target.derived = {field: how}
    else:
        derived.setdefault(field, how)
