"""Detection thresholds and the ``detection`` section: the typed config the rule detectors read.

Kept apart from ``config`` (which needs pydantic-settings and the processor's other sections) so
the detectors' live trackers, and the agent-side guards that run them, load with pydantic alone.
``config`` re-exports everything here.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mast_otel.processors import taxonomy


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Thresholds(_Section):
    """A detector group's thresholds: frozen, so defaults and shared values (``content_signals.OPT_IN``) are never copied
    or changed in place."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RepetitionConfig(_Thresholds):
    """FM-1.3 step repetition (detector ``repetition``)."""

    min_tool_repeats: int = Field(3, ge=2, description=(
        "FM-1.3: calls of one tool with the same arguments that return the same result in a row before the run "
        "counts as looping (a changed result resets the count: polling that sees progress is not repetition)."))
    min_output_repeats: int = Field(3, ge=2, description=(
        "FM-1.3: times the same model output (whitespace and case ignored) may appear before it counts as "
        "repetition. Needs captured content."))
    min_output_chars: int = Field(60, ge=0, description=(
        "FM-1.3: shorter model outputs (a line of a few words, such as an acknowledgement or a turn-passing line) "
        "are ignored by the repeated-output check: repeating them is protocol, not repeated work."))


class TerminationConfig(_Thresholds):
    """FM-1.5 unaware of termination conditions (detector ``unaware_of_termination``)."""

    default_max_steps: int = Field(0, ge=0, description=(
        "FM-1.5: a run-wide step limit (iterations over the whole run), assumed where no budget the run states was "
        "used up; 0 disables it. Its findings name it and are rated lower (0.6). Lets live detection flag a runaway "
        "run before its agent span ends."))
    steps_after_success: int = Field(4, ge=1, description=(
        "FM-1.5: tool calls after the run's last verification passed that count as working past the task's "
        "success evidence."))


class PrematureConfig(_Thresholds):
    """FM-3.1 premature termination (detector ``premature_termination``)."""

    budget_fraction: float = Field(0.5, ge=0, le=1, description=(
        "FM-3.1: a run that gives up (claims no success) having used at most this share of its step budget "
        "stopped with budget left; so did an agent that reported a tool's failure having used at most this share."))


class HistoryConfig(_Thresholds):
    """FM-1.4 loss of history and FM-2.1 conversation reset (detector ``history``)."""

    drop_ratio: float = Field(0.5, ge=0, le=1, description=(
        "FM-1.4: an agent's input message count falling to this share of its running maximum or below is lost "
        "history."))
    min_messages: int = Field(4, ge=0, description=(
        "FM-1.4/FM-2.1: drops are only judged once an agent's context has held this many messages."))


class ContentConfig(_Thresholds):
    """The content signals (detectors ``repeated_work``, ``continued_after_answer``, ``answer_off_last_result``).

    All off (0) by default: none reached precision 0.7 on the benchmark (docs/detection.md).
    """

    repeated_work_similarity: float = Field(0.0, ge=0, le=1, description=(
        "FM-1.3 content signal: a model output or tool input sharing at least this share of its word 3-shingles "
        "(Jaccard) with an earlier step of the same agent repeats work; 0 disables it (the benchmark measures "
        "0.8)."))
    calls_after_answer: int = Field(0, ge=0, description=(
        "FM-1.5 content signal: tool calls after the one that already produced the final answer's value; 0 "
        "disables it (the benchmark measures 2)."))
    max_answer_words: int = Field(0, ge=0, description=(
        "FM-2.6 content signal: final answers of at most this many words are checked against the values the last "
        "successful tool call computed (longer answers are prose, not values); also bounds the answers the FM-1.5 "
        "content signal reads; 0 disables it (the benchmark measures 8)."))


# The typed threshold groups, by their key in ``detection`` (and in the deprecated dotted keys).
_THRESHOLD_GROUPS: dict[str, type[_Thresholds]] = {
    "repetition": RepetitionConfig,
    "termination": TerminationConfig,
    "premature": PrematureConfig,
    "history": HistoryConfig,
    "content": ContentConfig,
}


class DetectionConfig(_Section):
    """Rule detectors: severity overrides, enabled modes and every threshold."""

    severity_overrides: dict[str, taxonomy.Severity] = Field(
        {}, description="Mode id -> severity reported for it, replacing the registry's.")
    disabled_modes: list[str] = Field(
        [], description='Modes never reported, e.g. ["FM-2.2"]; bare "2.2" is accepted too.')
    live: bool = Field(True, description="Raise findings while a trace is still streaming in (live detection).")
    repetition: RepetitionConfig = RepetitionConfig()
    termination: TerminationConfig = TerminationConfig()
    premature: PrematureConfig = PrematureConfig()
    history: HistoryConfig = HistoryConfig()
    content: ContentConfig = ContentConfig()

    @model_validator(mode="before")
    @classmethod
    def _deprecated_thresholds(cls, data: object) -> object:
        """Map the deprecated ``thresholds: {"group.name": value}`` form onto the typed groups."""
        if not isinstance(data, dict) or "thresholds" not in data:
            return data
        data = dict(data)
        old = data.pop("thresholds")
        if isinstance(old, str):  # MAST_OTEL_DETECTION__THRESHOLDS as JSON
            old = json.loads(old)
        if not isinstance(old, dict):
            raise ValueError("detection.thresholds (deprecated) must be a mapping of 'group.name' to a number")
        known = sorted(f"{group}.{name}" for group, model in _THRESHOLD_GROUPS.items() for name in model.model_fields)
        unknown = sorted(str(key) for key in old if key not in known)
        if unknown:
            raise ValueError(f"unknown detection thresholds {unknown}; known keys: {known} (detection.thresholds "
                             "is deprecated: set detection.<group>.<name> instead)")
        # FutureWarning, not DeprecationWarning: Python shows it by default, and it is meant for whoever edits the config.
        warnings.warn("detection.thresholds is deprecated: set detection.<group>.<name> instead "
                      "(e.g. detection.repetition.min_tool_repeats)", FutureWarning, stacklevel=2)
        for key, value in old.items():
            group, name = key.split(".", 1)
            section = data.get(group)
            if isinstance(section, BaseModel):
                section = section.model_dump(exclude_unset=True)
            if section is None or isinstance(section, dict):  # anything else is left for validation to reject
                data[group] = {name: value, **(section or {})}  # a value set the typed way wins
        return data

    @field_validator("severity_overrides", "disabled_modes", mode="after")
    @classmethod
    def _known_modes(cls, value: Any) -> Any:
        for mode in value:
            try:
                taxonomy.get(mode)
            except KeyError as exc:  # pydantic reports ValueErrors as validation errors, not KeyErrors
                raise ValueError(exc.args[0]) from None
        return value

    @field_validator("disabled_modes", mode="after")
    @classmethod
    def _canonical_modes(cls, value: list[str]) -> list[str]:
        return [taxonomy.get(mode).id for mode in value]
