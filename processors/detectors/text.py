"""Plain text measures the content detectors share: word shingles, similarity, numeric values.

Nothing here knows any framework's message format: text is lowercased word tokens, and a
number is a decimal or a fraction wherever it appears. Pure functions, no state.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")
# A number not glued to a word or another number: 12, -3.5, 1,089, 21/2, 1089 / 20.
_NUMBER = re.compile(r"(?<![\w.-])-?\d[\d,]*(?:\.\d+)?(?:\s*/\s*\d+(?:\.\d+)?)?(?!\w)")


def words(text: str | None) -> list[str]:
    return _WORD.findall((text or "").lower())


def shingles(text: str | None, size: int = 3) -> frozenset[int]:
    """Hashes of the text's overlapping runs of ``size`` words (case and punctuation ignored)."""
    w = words(text)
    return frozenset(hash(tuple(w[i:i + size])) for i in range(len(w) - size + 1))


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def numbers(text: str | None) -> frozenset[float]:
    """Every numeric value the text states; a fraction ``a/b`` counts as ``a``, ``b`` and ``a/b``."""
    out: set[float] = set()
    for raw in _NUMBER.findall(text or ""):
        token = raw.replace(",", "").replace(" ", "")
        head, _, tail = token.partition("/")
        out.add(float(head))
        if tail:
            out.add(float(tail))
            if float(tail):
                out.add(float(head) / float(tail))
    return frozenset(out)


def same_value(a: float, b: float, tolerance: float = 0.005) -> bool:
    """Equal up to rounding: ``26.67`` states ``26.666...``, ``1.5`` states ``3/2``."""
    return abs(a - b) <= tolerance * max(1.0, abs(a))


def any_same(values: frozenset[float], others: frozenset[float]) -> bool:
    return any(same_value(a, b) for a in values for b in others)
