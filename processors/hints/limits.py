"""Runs a framework stopped at its own turn, step, request or recursion limit (FM-1.5).

Frameworks stop a run that does not end by itself and say so in their own words, in two
places, each with its own patterns:

- errors (``hints.limit_patterns``): an error type, error message or finish reason on the
  agent span (``MaxTurnsExceeded``, ``UsageLimitExceeded``, ``LlmCallsLimitExceededError``,
  ``GraphRecursionError``, LangChain's ``ModelCallLimitExceededError``, "Max iterations of 8
  reached", strands' ``limit_turns``, the draft GenAI ``gen_ai.agent.finish_reason``); short
  texts, read whole;
- time limits (``hints.timeout_patterns``): an agent span's error saying the framework's own
  time limit ran out (CrewAI's task ``max_execution_time``), read like the errors above; the
  run is then stopped by ``timeout``, not ``max_steps``;
- a check's retry limit (``hints.guardrail_patterns``): an agent span's error saying the
  framework's own check of the answer (CrewAI's guardrails) rejected every attempt it allowed:
  the answers kept breaking the task's rules (FM-1.1), read like the errors above;
- answers (``hints.limit_answer_patterns``): a graceful answer in place of a real one
  (LangGraph's "need more steps", LangChain's call-limit middleware's "Model call limits
  exceeded: run limit (6/6)") or the prompt a framework sends to force a final answer
  (CrewAI's "absolute best final answer", smolagents' "provide an answer to the following
  user task"), read from the start of the final answer and of the last model call's last
  message only, so a long report that mentions "max retries reached" is not taken for one.

Pure functions.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

DEFAULT_LIMIT_PATTERNS = (
    r"\b(MaxTurnsExceeded|UsageLimitExceeded|LlmCallsLimitExceeded\w*|GraphRecursionError|MaxIterations\w*|"
    r"MaxStepsReached\w*|AgentMaxSteps\w*|MaxStepsExceeded\w*|IterationLimit\w*|TurnLimit\w*|(Model|Tool)CallLimitExceeded\w*)\b",
    r"\bmax(imum)?[ _-]?(turns|steps|iterations|iter|llm[ _]calls|rounds|tool[ _]iterations)\b.{0,40}\b(exceeded|reached|hit)\b",
    r"\b(exceeded|reached|hit)\b.{0,30}\bmax(imum)?[ _-]?(turns|steps|iterations|iter|llm[ _]calls|rounds)\b",
    r"\b(turn|step|iteration|recursion|request|usage|llm call|model call|tool call)s? limits?\b.{0,40}\b(exceeded|reached|hit|of \d+)",
    r"^(limit_(turns|steps|iterations|calls|requests|tool_calls)|max_(turns|steps|iterations|llm_calls|rounds)|"
    r"(turn|step|iteration|recursion|usage)_limit)$",  # finish reasons
)
DEFAULT_TIMEOUT_PATTERNS = (
    r"\bmax_execution_time\b",  # CrewAI: "Task '...' execution timed out after 1 seconds. Consider increasing max_execution_time"
)
DEFAULT_GUARDRAIL_PATTERNS = (
    # CrewAI: "Agent's guardrail failed validation after 2 retries", "Task failed guardrail validation after 3 retries";
    # "after 0 retries" is one rejection with no second attempt (or the check itself raising): no sign of an agent that kept at it
    r"\bguardrail\b.{0,40}\bafter [1-9]\d* retr(y|ies)\b",
)
DEFAULT_LIMIT_ANSWER_PATTERNS = (
    r"\bneed(s)? more steps\b",  # LangGraph's graceful answer at its recursion limit
    r"\bran out of (steps|turns|iterations)\b",
    r"^(model|tool) call limits? (exceeded|reached)\b",  # LangChain 1.x call-limit middleware ending the run
    r"\bagent stopped due to (iteration|time) limit\b",  # LangChain AgentExecutor
    r"\bMUST give your absolute best final answer\b",  # CrewAI's forced final answer at max_iter
    r"\bit got stuck and failed to do so\b|^Based on the above, please provide an answer to the following user task\b",  # smolagents at max_steps
)
ERROR_CHARS = 1024  # error texts are read this far
ANSWER_CHARS = 400  # answers and prompts are read this far: a limit answer says so at once


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """All patterns as one alternation: one pass over each text instead of one per pattern."""
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE | re.MULTILINE)


def limit_in(texts: Sequence[str | None], patterns: Sequence[str] = DEFAULT_LIMIT_PATTERNS,
             chars: int = ERROR_CHARS) -> str | None:
    """The first phrase of ``texts`` that says a limit stopped the run (``patterns`` searched in
    each text's first ``chars`` characters), or ``None``."""
    compiled = _compiled(tuple(patterns))
    for text in texts:
        if text:
            found = compiled.search(text[:chars])
            if found:
                return found.group(0).strip()
    return None
