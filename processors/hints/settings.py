"""The ``hints`` section: the tool catalog and the patterns hint derivation reads.

Kept apart from ``config`` so hint derivation reads its own defaults without importing the
processor's whole configuration (which imports this package). ``config`` re-exports everything here.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mast_otel.wire.claims import DEFAULT_FAILURE_PATTERNS, DEFAULT_SUCCESS_PATTERNS
from mast_otel.processors.hints import limits, model_names


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolRule(_Section):
    """One tool catalog entry: which kind of action a tool is, optionally for one service or agent."""

    name: str = Field(description="the tool's name, or a shell-style pattern such as 'restart_*'")
    kind: Literal["read", "write", "verify", "clarify", "handoff", "other"] = Field(
        description="what the tool does: reads, changes, checks, asks a person, hands off to another agent")
    service: str | None = Field(None, description="only for spans of this service.name")
    agent: str | None = Field(None, description="only for runs of this agent")


def valid_patterns(patterns: list[str], what: str) -> list[str]:
    """``patterns`` unchanged when each is a valid regular expression; else the one that is not, named."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{what} {pattern!r} is not a valid regular expression: {exc}") from None
    return patterns


class HintsConfig(_Section):
    """Hints derived from what frameworks emit where mast-otel's own ``mast.*`` hints are absent."""

    tools: list[ToolRule] = Field([], description="the tool catalog; the first matching entry wins over inference")
    infer_tool_kinds: bool = Field(True, description="infer a tool's kind from its name or description when no hint or catalog entry gives it")
    success_patterns: list[str] = Field(list(DEFAULT_SUCCESS_PATTERNS), description="regular expressions: a final answer matching one claims success")
    failure_patterns: list[str] = Field(list(DEFAULT_FAILURE_PATTERNS), description="regular expressions: a final answer matching one says the task was not done (wins over success)")
    limit_patterns: list[str] = Field(default_factory=limits.default_limit_patterns, description="regular expressions over an agent span's error type, error message and finish reason that mean a framework limit stopped the run")
    timeout_patterns: list[str] = Field(default_factory=limits.default_timeout_patterns, description="regular expressions over an agent span's error type and error message that mean the framework's own time limit stopped the run")
    guardrail_patterns: list[str] = Field(default_factory=limits.default_guardrail_patterns, description="regular expressions over an agent span's error type and error message that mean the framework's own check of the answer (a guardrail) rejected every attempt it allowed")
    limit_answer_patterns: list[str] = Field(default_factory=limits.default_limit_answer_patterns, description="regular expressions over the start of a final answer or of the last model call's last message that mean a framework limit forced the answer")
    model_aliases: dict[str, str] = Field({}, description="model name -> the name to report it under; provider prefixes ('openai/gpt-4o-mini') are folded before, and a snapshot's alias wins over folding it into its family")
    fold_model_snapshots: bool = Field(True, description=(
        "report a dated snapshot under its family: a model name ending in a date (-2024-07-18, -20241022, "
        "@20241022) or in -latest loses that ending (gpt-4o-mini-2024-07-18 is counted as gpt-4o-mini) in the "
        "metrics, the tables and the web view; off: every snapshot is a model of its own"))

    def model_name(self, model: str | None) -> str | None:
        """The name ``model`` is reported under (provider prefix, aliases, snapshot rule)."""
        return model_names.fold(model, self.model_aliases, snapshots=self.fold_model_snapshots)

    @field_validator("success_patterns", "failure_patterns", "limit_patterns", "timeout_patterns", "guardrail_patterns",
                     "limit_answer_patterns", mode="after")
    @classmethod
    def _patterns_compile(cls, value: list[str]) -> list[str]:
        return valid_patterns(value, "pattern")
