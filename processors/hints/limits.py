"""Runs a framework stopped at its own turn, step, request or recursion limit (FM-1.5).

Frameworks stop a run that does not end by itself and say so in their own words: an error
type on the agent span (``MaxTurnsExceeded``, ``UsageLimitExceeded``,
``LlmCallsLimitExceededError``, ``GraphRecursionError``, ...), its message, or a graceful
answer in place of a real one (LangGraph's "need more steps", smolagents' "Reached max
steps"). The draft GenAI attribute ``gen_ai.agent.finish_reason`` says it outright when an
emitter writes it. Pure function; the patterns are configuration (``hints.limit_patterns``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

DEFAULT_LIMIT_PATTERNS = (
    r"\b(MaxTurnsExceeded|UsageLimitExceeded|LlmCallsLimitExceeded\w*|GraphRecursionError|MaxIterations\w*|"
    r"MaxStepsReached\w*|AgentMaxSteps\w*|MaxStepsExceeded\w*|IterationLimit\w*|TurnLimit\w*)\b",
    r"\bmax(imum)?[ _-]?(turns|steps|iterations|iter|llm[ _]calls|rounds|tool[ _]iterations)\b.{0,40}\b(exceeded|reached|hit)\b",
    r"\b(exceeded|reached|hit)\b.{0,30}\bmax(imum)?[ _-]?(turns|steps|iterations|iter|llm[ _]calls|rounds)\b",
    r"\b(turn|step|iteration|recursion|request|usage|llm call|model call|tool call)s? limit\b.{0,40}\b(exceeded|reached|hit|of \d+)",
    r"\bneed(s)? more steps\b",
    r"\bagent stopped due to (iteration|time) limit\b",
)
LIMIT_FINISH_REASONS = frozenset({"max_iterations", "max_turns", "max_steps", "max_tokens_per_run", "iteration_limit",
                                  "turn_limit", "step_limit", "recursion_limit", "usage_limit", "max_llm_calls"})


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


def limit_in(texts: Sequence[str | None], patterns: Sequence[str] = DEFAULT_LIMIT_PATTERNS) -> str | None:
    """The first phrase of ``texts`` (error types, status messages, answers) that says a limit
    stopped the run, or ``None``."""
    compiled = _compiled(tuple(patterns))
    for text in texts:
        if not text:
            continue
        for pattern in compiled:
            found = pattern.search(text[:4096])
            if found:
                return found.group(0).strip()
    return None
