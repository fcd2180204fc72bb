"""A final answer read for a claim once per run, however many detectors ask.

Hint derivation, attribution and several detectors read the same answers and reports of one run
for a claim of success or of failure (``wire.claims.claim_in``). While the run's diagnosis holds
a memo (``content_memo.remembering``, on the shortcuts path) each text is read once per set of
patterns, and the failure patterns (searched first, case-blind, over dozens of alternatives) are
not searched in an ASCII text holding none of the words a match of them needs
(``limits.needed_words``): there they are replaced by a pattern that never matches, so the success
patterns decide, as they do after a failure search that found nothing. Without a memo, every ask
reads the text afresh with every pattern. Same answers either way: ``claim_in`` is pure.
"""

from __future__ import annotations

from typing import Sequence

from mast_otel.wire.claims import ANSWER_CHARS, DEFAULT_FAILURE_PATTERNS, DEFAULT_SUCCESS_PATTERNS
from mast_otel.wire.claims import claim_in as read_claim
from mast_otel.processors.hints.limits import needed_words
from mast_otel.processors.tools.content_memo import held, scanned

NEVER = (r"(?!)",)  # a pattern no text matches: the failure search of a text it cannot match


def claim_in(answer: str | None, success: Sequence[str] = DEFAULT_SUCCESS_PATTERNS,
             failure: Sequence[str] = DEFAULT_FAILURE_PATTERNS) -> tuple[bool, str] | None:
    """``wire.claims.claim_in(answer, success, failure)``, once per text and patterns while a memo is held."""
    if not answer:
        return None
    success, failure = tuple(success), tuple(failure)
    if not held():
        return read_claim(answer, success, failure)
    needed = needed_words(failure)
    return scanned(("claim", success, failure), answer,
                   lambda text: read_claim(text, success, failure if _may_fail(text, needed) else NEVER))


def _may_fail(text: str, needed: tuple[str, ...] | None) -> bool:
    """Whether the failure patterns may match ``text`` (read as far as ``claim_in`` reads it): not when
    it is ASCII and holds none of their ``needed`` words (in lower case)."""
    if needed is None:
        return True
    head = text[:ANSWER_CHARS]
    if not head.isascii():
        return True
    lower = head.lower()
    return any(word in lower for word in needed)
