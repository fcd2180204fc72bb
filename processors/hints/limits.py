"""Runs a framework stopped at its own turn, step, request or recursion limit (FM-1.5).

Frameworks stop a run that does not end by itself and say so in their own words, in four
places, each with its own patterns (a framework's own words are in its table under
``processors/frameworks/<family>/``; the generic shapes are here; the defaults of each
``hints.*_patterns`` setting are the frameworks' words, then the generic ones):

- errors (``hints.limit_patterns``): an error type, error message or finish reason on the
  agent span (an exception named ``MaxIterations...``, "Max iterations of 8 reached", a finish
  reason ``limit_turns``, the draft GenAI ``gen_ai.agent.finish_reason``); short texts, read whole;
- time limits (``hints.timeout_patterns``): an agent span's error saying the framework's own
  time limit ran out, read like the errors above; the run is then stopped by ``timeout``, not
  ``max_steps``;
- a check's retry limit (``hints.guardrail_patterns``): an agent span's error saying the
  framework's own check of the answer (a guardrail) rejected every attempt it allowed: the
  answers kept breaking the task's rules (FM-1.1), read like the errors above;
- answers (``hints.limit_answer_patterns``): a graceful answer in place of a real one ("ran out
  of steps") or the prompt a framework sends to force a final answer, read from the start of
  the final answer and of the last model call's last message only, so a long report that
  mentions "max retries reached" is not taken for one.

Pure functions (a text's reading is kept while a run's diagnosis holds a memo).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

from mast_otel.processors.frameworks import registry
from mast_otel.processors.tools.content_memo import scanned

# The shapes no one framework owns.
GENERIC_LIMIT_PATTERNS = (
    r"\b(MaxIterations\w*|MaxStepsReached\w*|MaxStepsExceeded\w*|IterationLimit\w*|TurnLimit\w*)\b",
    r"\bmax(imum)?[ _-]?(turns|steps|iterations|iter|llm[ _]calls|rounds|tool[ _]iterations)\b.{0,40}\b(exceeded|reached|hit)\b",
    r"\b(exceeded|reached|hit)\b.{0,30}\bmax(imum)?[ _-]?(turns|steps|iterations|iter|llm[ _]calls|rounds)\b",
    r"\b(turn|step|iteration|recursion|request|usage|llm call|model call|tool call)s? limits?\b.{0,40}\b(exceeded|reached|hit|of \d+)",
    r"^(limit_(turns|steps|iterations|calls|requests|tool_calls)|max_(turns|steps|iterations|llm_calls|rounds)|"
    r"(turn|step|iteration|recursion|usage)_limit)$",  # finish reasons
)
GENERIC_LIMIT_ANSWER_PATTERNS = (
    r"\bran out of (steps|turns|iterations)\b",
)


def default_limit_patterns() -> list[str]:
    """``hints.limit_patterns``' default: every framework's limit errors, then the generic shapes."""
    return [*registry().limit_errors, *GENERIC_LIMIT_PATTERNS]


def default_timeout_patterns() -> list[str]:
    """``hints.timeout_patterns``' default: every framework's time-limit errors."""
    return list(registry().time_limit_errors)


def default_guardrail_patterns() -> list[str]:
    """``hints.guardrail_patterns``' default: every framework's words for a guardrail that gave up."""
    return list(registry().guardrail_errors)


def default_limit_answer_patterns() -> list[str]:
    """``hints.limit_answer_patterns``' default: every framework's limit answers, then the generic ones."""
    return [*registry().limit_answers, *GENERIC_LIMIT_ANSWER_PATTERNS]


_DEFAULTS = {"DEFAULT_LIMIT_PATTERNS": default_limit_patterns, "DEFAULT_TIMEOUT_PATTERNS": default_timeout_patterns,
             "DEFAULT_GUARDRAIL_PATTERNS": default_guardrail_patterns,
             "DEFAULT_LIMIT_ANSWER_PATTERNS": default_limit_answer_patterns}


def __getattr__(name: str) -> tuple[str, ...]:
    """The defaults as tuples (``DEFAULT_LIMIT_PATTERNS`` ...), read from the registry when asked for."""
    if name in _DEFAULTS:
        return tuple(_DEFAULTS[name]())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ERROR_CHARS = 1024  # error texts are read this far
ANSWER_CHARS = 400  # answers and prompts are read this far: a limit answer says so at once


@lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """All patterns as one alternation: one pass over each text instead of one per pattern."""
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE | re.MULTILINE)


@lru_cache(maxsize=64)
def needed_words(patterns: tuple[str, ...]) -> tuple[str, ...] | None:
    """Words one of which (in lower case) any match of ``patterns`` holds: each pattern's top-level
    alternatives' longest run of plain characters outside groups (``\\bran out of (steps|turns)``: "ran
    out of "); ``None`` when an alternative shows none (or the patterns set flags or are not ASCII).
    A text of ASCII characters without any of them holds no match: the search (slow, case-blind over
    dozens of alternatives) is skipped. Non-ASCII texts are searched: case-blind matching folds a few
    non-ASCII letters (the Kelvin sign, the long s) onto ASCII ones, ``str.lower`` does not."""
    needed: list[str] = []
    for pattern in patterns:
        if not pattern.isascii() or re.search(r"\(\?[a-zA-Z-]", pattern):
            return None
        words = _words(pattern)
        if words is None:
            return None
        needed += words
    return tuple(dict.fromkeys(needed))


def _words(pattern: str) -> list[str] | None:
    """A word for each top-level alternative of ``pattern`` (one of which any match holds): its longest
    plain run, else, for an alternative that is one group (``\\b(MaxTurns\\w*|TurnLimit\\w*)\\b``), a word
    for each of the group's alternatives; ``None`` when an alternative shows none."""
    words = []
    for branch in _top_level(pattern, "|"):
        word = max(_top_level(branch, None), key=len, default="")
        if len(word) >= 3:
            words.append(word.lower())
            continue
        inner = _lone_group(branch)
        found = _words(inner) if inner is not None else None
        if found is None:
            return None
        words += found
    return words


# What may stand before a branch's one group: an anchor, or a run of separators (``^\\W*(failed|error)\\b``);
# a match of the branch holds a match of the group either way
_LEADING = ("^", "\\b", "\\W*", "\\W+", "\\s*", "\\s+")


def _lone_group(branch: str) -> str | None:
    """The inside of a branch that is one plain group between anchors (``^``, ``$``, ``\\b``), perhaps after
    a run of separators (``\\W*``, ``\\s+``), else ``None``."""
    body = branch
    while body.startswith(_LEADING):
        body = body[1:] if body[0] == "^" else body[2:] if body[:2] == "\\b" else body[3:]
    while body.endswith("$") or (body.endswith("\\b") and not body.endswith("\\\\b")):
        body = body[:-1] if body[-1] == "$" else body[:-2]
    if not body.startswith("(") or body.startswith("(?") or not body.endswith(")"):
        return None
    depth, i = 0, 0
    while i < len(body):  # the first group must close at the very end
        c = body[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            end = i + 1 + (body[i + 1:i + 2] == "^")
            end += body[end:end + 1] == "]"
            while end < len(body) and body[end] != "]":
                end += 2 if body[end] == "\\" else 1
            i = end + 1
            continue
        depth += (c == "(") - (c == ")")
        if depth == 0:
            return body[1:-1] if i == len(body) - 1 else None
        i += 1
    return None


def _top_level(pattern: str, split: str | None) -> list[str]:
    """``split="|"``: the pattern's alternatives outside groups and classes; ``None``: its runs of plain
    characters outside groups and classes (a character a quantifier follows left out: it may repeat or be missing)."""
    parts: list[str] = []
    current: list[str] = []
    depth = i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if split is None:
                parts.append("".join(current))
                current = []
            else:
                current.append(pattern[i:i + 2])
            i += 2
            continue
        if c == "[":  # a class: to its closing bracket (a first "]" or "^]" is literal)
            end = i + 1 + (pattern[i + 1:i + 2] == "^")
            end += pattern[end:end + 1] == "]"
            while end < len(pattern) and pattern[end] != "]":
                end += 2 if pattern[end] == "\\" else 1
            if split is not None:
                current.append(pattern[i:end + 1])
            else:
                parts.append("".join(current))
                current = []
            i = end + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if split is not None:
            if c == split and not depth:
                parts.append("".join(current))
                current = []
            else:
                current.append(c)
        elif depth or c in "()^$.|" or c in "*+?{":
            if c in "*+?{" and current and not depth:
                current.pop()  # the character before a quantifier may repeat or be missing
            parts.append("".join(current))
            current = []
            counted = re.match(r"\{\d*,?\d*\}", pattern[i:]) if c == "{" and not depth else None
            if counted:  # a count ({0,30}), not characters
                i += counted.end()
                continue
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    return parts if split is not None else [p for p in parts if p]


def limit_in(texts: Sequence[str | None], patterns: Sequence[str] | None = None,
             chars: int = ERROR_CHARS) -> str | None:
    """The first phrase of ``texts`` that says a limit stopped the run (``patterns``, by default
    the limit errors, searched in each text's first ``chars`` characters), or ``None``."""
    pattern_set = tuple(patterns if patterns is not None else default_limit_patterns())
    compiled, needed = _compiled(pattern_set), needed_words(pattern_set)
    for text in texts:
        if text:  # each text read once per run while its diagnosis holds a memo (content_memo.scanned)
            said = scanned((compiled, chars), text, lambda t: _phrase(compiled, t, chars, needed))
            if said is not None:
                return said
    return None


def _phrase(compiled: re.Pattern[str], text: str, chars: int, needed: tuple[str, ...] | None = None) -> str | None:
    """The first phrase ``compiled`` finds in ``text``'s first ``chars`` characters; a text of ASCII
    characters holding none of the ``needed`` words (``needed_words``) is not searched."""
    head = text[:chars]
    if needed is not None and head.isascii():
        lower = head.lower()
        if not any(word in lower for word in needed):
            return None
    found = compiled.search(head)
    return found.group(0).strip() if found else None
