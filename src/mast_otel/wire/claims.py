"""Whether a run's final answer claims the task done, says it was not, or says neither.

Shared by both sides, like ``hashing``: the agent-side ``agent_run.set_final_answer`` reads
its own answer (it has the text even with content capture off) so "NOT RESOLVED: ..." is not
taken for a claim of success, and the processor reads the final answers of runs that did not
say (``mast.run.claimed_success``), with patterns from its configuration
(``hints.success_patterns`` / ``hints.failure_patterns``). A failure pattern wins over a
success pattern ("I could not restart it, so the incident is not resolved" is no claim of
success). Pure function, standard library only.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

ANSWER_CHARS = 2048  # an answer is read this far: a claim is made up front, not deep in a report

DEFAULT_FAILURE_PATTERNS = (
    r"\b(could\s*n[o']t|can\s*n[o']t|cannot|unable to|failed to|was not able|wasn't able|did not (work|succeed|help))\b",
    r"\bnot (been |yet )?(resolved|fixed|solved|restored|healthy)\b",
    r"\b(unresolved|gave up|giving up|no fix|need(s)? more steps|ran out of (steps|turns|time))\b",
    r"^\W*(not resolved|failed|failure|error)\b",
)
DEFAULT_SUCCESS_PATTERNS = (
    r"\b(resolved|fixed|solved|restored|mitigated|recovered|remediated|succeeded|successfully)\b",
    r"\b(is|are) (now |back )?(healthy|running|up|back up|working)\b",
    r"\b(task|incident|issue|problem) (is |has been )?(done|complete|completed|closed)\b",
)


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """All patterns as one alternation: one pass over the answer instead of one per pattern."""
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE | re.MULTILINE)


def claim_in(answer: str | None, success: Sequence[str] = DEFAULT_SUCCESS_PATTERNS,
             failure: Sequence[str] = DEFAULT_FAILURE_PATTERNS) -> tuple[bool, str] | None:
    """(claimed success, the phrase that says so), or ``None`` when the answer says neither."""
    if not answer:
        return None
    answer = answer[:ANSWER_CHARS]
    found = _compiled(tuple(failure)).search(answer)
    if found:
        return False, found.group(0).strip()
    found = _compiled(tuple(success)).search(answer)
    if found:
        return True, found.group(0).strip()
    return None
