"""Runs a framework stopped at its own turn, step, request or recursion limit (FM-1.5).

Frameworks stop a run that does not end by itself and say so in their own words: an error
type on the agent span (``MaxTurnsExceeded``, ``UsageLimitExceeded``,
``LlmCallsLimitExceededError``, ``GraphRecursionError``, ...), its message, or a graceful
answer in place of a real one (LangGraph's "need more steps", smolagents' "Reached max
steps"), or the prompt a framework sends to force a final answer once the limit is hit
(CrewAI's "absolute best final answer", smolagents' "provide an answer to the following user
task"), read from the last message of the run's last model call. The draft GenAI attribute ``gen_ai.agent.finish_reason`` says it outright when an
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
    r"^(limit_(turns|steps|iterations|calls|requests|tool_calls)|max_(turns|steps|iterations|llm_calls|rounds)|"
    r"(turn|step|iteration|recursion|usage)_limit)$",  # finish reasons (strands, draft gen_ai.agent.finish_reason)
    r"\bagent stopped due to (iteration|time) limit\b",
    # the prompts frameworks send for a forced final answer once their limit is hit
    r"\bMUST give your absolute best final answer\b",  # CrewAI, max_iter
    r"\bit got stuck and failed to do so\b|^Based on the above, please provide an answer to the following user task\b",  # smolagents
)


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE | re.MULTILINE) for p in patterns)


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
