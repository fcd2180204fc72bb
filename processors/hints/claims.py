"""A final answer read for a claim once per run, however many detectors ask.

Hint derivation, attribution and several detectors read the same answers and reports of one run
for a claim of success or of failure (``wire.claims.claim_in``). While the run's diagnosis holds
a memo (``content_memo.remembering``, on the shortcuts path) each text is read once per set of
patterns; without one, every ask reads it afresh. Same answers either way: ``claim_in`` is pure.
"""

from __future__ import annotations

from typing import Sequence

from mast_otel.wire.claims import DEFAULT_FAILURE_PATTERNS, DEFAULT_SUCCESS_PATTERNS
from mast_otel.wire.claims import claim_in as read_claim
from mast_otel.processors.tools.content_memo import scanned


def claim_in(answer: str | None, success: Sequence[str] = DEFAULT_SUCCESS_PATTERNS,
             failure: Sequence[str] = DEFAULT_FAILURE_PATTERNS) -> tuple[bool, str] | None:
    """``wire.claims.claim_in(answer, success, failure)``, once per text and patterns while a memo is held."""
    if not answer:
        return None
    success, failure = tuple(success), tuple(failure)
    return scanned(("claim", success, failure), answer, lambda text: read_claim(text, success, failure))
