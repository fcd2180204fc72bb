"""The 14 MAST failure modes: ids, names, categories, default severities, definitions.

Identifiers, names, categories and default severities are fixed (users rely on them); definitions
are mast-otel's own wording. ``covered_by`` says which tiers can see a mode: ``rules`` where
a run's structure shows it, ``judge`` where it takes reading the run. Users override
severities in configuration (``detection.severity_overrides``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

Severity = Literal["fatal", "recoverable", "unrated"]
SEVERITIES: tuple[Severity, ...] = ("fatal", "recoverable", "unrated")

CATEGORIES = {
    "FC1": "system design",
    "FC2": "inter-agent misalignment",
    "FC3": "task verification",
}


@dataclass(frozen=True, slots=True)
class FailureMode:
    id: str
    name: str
    category: str  # FC1 | FC2 | FC3
    severity: Severity
    definition: str
    covered_by: tuple[str, ...]  # subset of ("rules", "judge")


_MODES = (
    FailureMode(
        "FM-1.1", "Disobey task specification", "FC1", "recoverable",
        "The agent acts against what the task asked for or the limits it was given, such as "
        "changing things in a task declared read-only or answering in a form the task ruled out.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-1.2", "Disobey role specification", "FC1", "unrated",
        "An agent steps outside the role it was assigned: it calls tools its role does not "
        "allow or does the work another agent was given.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-1.3", "Step repetition", "FC1", "recoverable",
        "The run goes round in circles: the same action with the same inputs is taken again "
        "and gets the same result, or the model keeps producing the same output.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-1.4", "Loss of conversation history", "FC1", "fatal",
        "Context that the run had already built up disappears: fewer messages or no task "
        "reach the model later on, or the agent asks again for what it already obtained.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-1.5", "Unaware of termination conditions", "FC1", "fatal",
        "The run does not know when to stop: it exhausts its step budget or time, never "
        "ends, or keeps working after the task was already done.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-2.1", "Conversation reset", "FC2", "unrated",
        "The dialogue restarts from scratch partway through, dropping the progress made so far.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-2.2", "Fail to ask for clarification", "FC2", "fatal",
        "Faced with a request that is unclear or missing information, the agent guesses and "
        "acts instead of asking.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-2.3", "Task derailment", "FC2", "fatal",
        "The run drifts away from the goal it was given and spends its effort on something else.",
        ("judge",),
    ),
    FailureMode(
        "FM-2.4", "Information withholding", "FC2", "unrated",
        "An agent holds information that another agent or the user needs and does not pass it on.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-2.5", "Ignored other agent's input", "FC2", "unrated",
        "An agent disregards a correction, result or suggestion that another agent gave it.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-2.6", "Reasoning-action mismatch", "FC2", "recoverable",
        "What the agent says it will do and what it then does differ: it announces one action "
        "and carries out another.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-3.1", "Premature termination", "FC3", "fatal",
        "The run stops before the task is done: right after an unresolved error or a failed "
        "check, or giving up while budget and untried options remain.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-3.2", "No or incomplete verification", "FC3", "unrated",
        "The agent changes something or produces a result and never checks it, or checks only "
        "part of it, before reporting success.",
        ("rules", "judge"),
    ),
    FailureMode(
        "FM-3.3", "Incorrect verification", "FC3", "recoverable",
        "The agent's check is wrong: it reports success although its own verification failed, "
        "or cites evidence that nothing in the run produced.",
        ("rules", "judge"),
    ),
)

MODES: Mapping[str, FailureMode] = {m.id: m for m in _MODES}
MODE_IDS: tuple[str, ...] = tuple(MODES)


def get(mode_id: str) -> FailureMode:
    """The mode for an id like ``FM-1.3``; also accepts the bare ``1.3`` of MAST-Data labels."""
    key = mode_id if mode_id.startswith("FM-") else f"FM-{mode_id}"
    try:
        return MODES[key]
    except KeyError:
        raise KeyError(f"unknown failure mode {mode_id!r}; expected one of {', '.join(MODE_IDS)}") from None


_SEVERITY: Mapping[str, Severity] = {m.id: m.severity for m in _MODES}


def severity(mode_id: str, overrides: Mapping[str, str] | None = None) -> Severity:
    """The mode's severity after user overrides."""
    if not overrides and mode_id in _SEVERITY:  # the usual call (per finding of every diagnosis)
        return _SEVERITY[mode_id]
    mode = get(mode_id)
    value = (overrides or {}).get(mode.id, mode.severity)
    return value  # type: ignore[return-value]  # validated by the config model


def is_fatal(mode_ids: list[str] | tuple[str, ...] | set[str], overrides: Mapping[str, str] | None = None) -> bool:
    return any(severity(m, overrides) == "fatal" for m in mode_ids)
