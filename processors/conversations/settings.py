"""Thresholds of session-level detection (the ``sessions.detection`` config section)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

# The user's own words asking for a fresh look: a tool re-run after such a turn is asked for, not repeated.
RECHECK_WORDS = (
    "again", "recheck", "re-check", "rerun", "re-run", "refresh", "retry", "try once more", "latest", "still",
    "now", "currently", "changed", "update", "updates", "updated", "news", "restarted", "fixed", "redeployed",
)  # fmt: skip
# An answer that says the agent does not have what the user gave (the agent asking again).
NOT_KNOWN_PATTERNS = (
    r"\b(?:don't|do not|didn't|did not|can't|cannot|can not)\s+(?:know|recall|remember|see|have)\b",
    r"\b(?:haven't|have not|hasn't|has not)\s+(?:told|said|mentioned|given|shared|provided)\b",
    r"\b(?:could|can|would) you\s+(?:tell|remind|give|share|provide)\b",
    r"\bremind me\b",
    r"\bno (?:record|mention|information) of\b",
)


class SessionDetectionConfig(BaseModel):
    """What counts as a cross-turn failure."""

    model_config = ConfigDict(extra="forbid")

    history_min_flat_turns: int = Field(2, ge=1, description=(
        "FM-1.4: turns in a row, from the session's second turn on, whose first model call is no larger than the "
        "session's first (in messages, or in input tokens without content) before the history counts as dropped. "
        "A turn that falls back to that size after the conversation had grown is a reset and counts at once."))
    history_token_slack: float = Field(0.5, ge=0.0, description=(
        "FM-1.4 without message counts: a turn's first model call whose input tokens are at most the smallest "
        "earlier turn's times (1 + this) reads as back at the opening (a new message of its own adds a little); a "
        "context trimmed to a window stays well above it and is not read as lost."))
    history_answer_share: float = Field(0.5, ge=0.0, le=1.0, description=(
        "FM-1.4 without message counts: share of the previous turn's answer (its output tokens) a carried "
        "conversation adds to the next turn's input; less growth than that (and at least "
        "history_min_token_growth) is no sign of the previous turn in the input."))
    history_min_token_growth: int = Field(8, ge=0, description=(
        "FM-1.4 without message counts: input-token growth from one turn's first model call to the next below "
        "which the previous turn is not in the input, when the previous answer's size is not known."))
    repeat_min_turns: int = Field(3, ge=2, description=(
        "FM-1.3: turns in a row that make the same tool call (same tool, same arguments) and get the same "
        "result, counting the first, before the session counts as redoing work it already has. A changed result "
        "(the data moved on) or a user turn asking to look again starts the count afresh."))
    recheck_words: list[str] = Field(list(RECHECK_WORDS), description=(
        "FM-1.3: words in a user's turn that ask for a fresh look (matched as whole words, case ignored); a "
        "repeated call in that turn is asked for. A user turn that repeats an earlier one word for word counts "
        "the same. Needs captured content."))
    not_known_patterns: list[str] = Field(list(NOT_KNOWN_PATTERNS), description=(
        "FM-1.4: regular expressions (case ignored) for an answer saying the agent does not have what the user "
        "gave; on a turn whose input lacks the earlier turns they raise the finding's confidence and add the "
        "answer as evidence. Needs captured content."))
    contradicted_checks: bool = Field(True, description=(
        "FM-3.3: flag a turn that claims success, without a check or a change of its own, after an earlier "
        "turn's check failed and no later check passed."))
    max_evidence: int = Field(12, ge=1, description="Evidence spans kept per session finding (the earliest ones).")

    @field_validator("not_known_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as e:
                raise ValueError(f"not a regular expression: {pattern!r} ({e})") from None
        return patterns
