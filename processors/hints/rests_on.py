"""Which run hints each mode's rule findings rest on, as the registered detectors declare them.

The detector registry (``detectors.catalog``) sets the table whenever its detectors change, and
:func:`~mast_otel.processors.hints.qualify` reads it. It sits here, below both, because the
detectors read hint derivation's modules: hint derivation must not import the detectors back.
Rule findings exist only once the detectors are imported, and so does the table.
"""

from __future__ import annotations

from typing import Mapping

_TABLE: Mapping[str, tuple[str, ...]] = {}


def mode_run_hints() -> Mapping[str, tuple[str, ...]]:
    """Mode -> the ``RunHints`` fields its rule findings rest on (``Detector.run_hints``)."""
    return _TABLE


def set_mode_run_hints(table: Mapping[str, tuple[str, ...]]) -> None:
    """Called by the detector registry only."""
    global _TABLE
    _TABLE = table
