"""What to do about each failure mode: the one typed place a finding's advice comes from.

A finding says what happened; this says what the mode is (the taxonomy's definition), what
prevents it (an agent-side guard where one exists, else what the agent should declare), which
settings tune the detector that finds it, and where the docs explain it (one section per mode
in ``docs/modes.md``). The run page, ``GET /v1/diagnoses/{id}`` and ``mast-otel analyze`` all
read it from here. Guards are named by their ``GuardConfig`` field, settings by their dotted
path in the processor configuration; a test checks that every name resolves.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from mast_otel.processors import taxonomy

DOCS_PAGE = "docs/modes.md"


@dataclass(frozen=True, slots=True)
class Remedy:
    """How one mode is prevented and tuned."""

    prevention: str  # plain words: what stops the mode from happening
    guards: tuple[str, ...] = ()  # agent-side guards acting on it (``GuardConfig`` field names)
    settings: tuple[str, ...] = ()  # processor settings that tune its detection (dotted config paths)


@dataclass(frozen=True, slots=True)
class WhatToDo:
    """A mode's advice as findings carry it."""

    mode: str
    description: str  # the taxonomy's definition
    prevention: str
    guards: tuple[str, ...]
    settings: tuple[str, ...]
    docs: str  # the docs section: ``docs/modes.md#<anchor>``

    def as_dict(self) -> dict[str, str | list[str]]:
        return {"description": self.description, "prevention": self.prevention, "guards": list(self.guards),
                "settings": list(self.settings), "docs": self.docs}


_DISABLE = "detection.disabled_modes"
_REMEDIES: dict[str, Remedy] = {
    "FM-1.1": Remedy(
        "Declare the task's limits on the agent span (mast.task.constraints, e.g. read_only) so they are "
        "checked, and give the agent tools that cannot break them; where the framework's own answer check "
        "rejects every retry, tell the model what the check expects.",
        settings=("hints.guardrail_patterns", _DISABLE)),
    "FM-1.2": Remedy(
        "Declare each agent's allowed tools (mast.agent.allowed_tools) and hand it only those; in a team, "
        "keep changes with the agents whose role is to make them.",
        settings=(_DISABLE,)),
    "FM-1.3": Remedy(
        "Turn on the loop guard: it refuses a call that already returned the same result for the same "
        "arguments, or ends the run; tell the model what changed (or that nothing will) instead of letting "
        "it retry.",
        guards=("loop",),
        settings=("detection.repetition.min_tool_repeats", "detection.repetition.min_output_repeats",
                  "detection.repetition.min_output_chars", "detection.content.repeated_work_similarity")),
    "FM-1.4": Remedy(
        "Keep the conversation the model is sent growing, or summarize it instead of cutting it, and keep "
        "the task in every request; answers the user already gave belong in the context.",
        settings=("detection.history.drop_ratio", "detection.history.min_messages")),
    "FM-1.5": Remedy(
        "Give every run a step budget (mast.task.max_steps, or detection.termination.default_max_steps) and "
        "turn on the budget guard: it stops the run at its budget and ends it as resolved once its last "
        "check passed with no change since.",
        guards=("budget",),
        settings=("detection.termination.default_max_steps", "detection.termination.steps_after_success",
                  "detection.content.calls_after_answer", "hints.limit_patterns", "hints.timeout_patterns")),
    "FM-2.1": Remedy(
        "Pass the conversation on when work moves between turns or agents, rather than starting each from "
        "the first message.",
        settings=("detection.history.min_messages",)),
    "FM-2.2": Remedy(
        "Mark requests that lack what the task needs as ambiguous (mast.task.ambiguous) and turn on the "
        "clarify-or-read-only guard: it refuses changes until the agent asked, while reads stay allowed; "
        "give the agent a clarify tool.",
        guards=("clarify_or_read_only",),
        settings=(_DISABLE,)),
    "FM-2.3": Remedy(
        "Restate the goal in each agent's instructions and give each only the tools its part of the task "
        "needs; only the judge finds this mode, so configure one to see it.",
        settings=("judge.model", "judge.min_confidence")),
    "FM-2.4": Remedy(
        "Have workers report failures as failures (the tool's error, not a summary that reads as success), "
        "and pass their reports on unchanged.",
        settings=("judge.model", _DISABLE)),
    "FM-2.5": Remedy(
        "Make the agent that reports to the user read its workers' reports before claiming success, and "
        "re-plan when one says the work failed.",
        settings=("judge.model", _DISABLE)),
    "FM-2.6": Remedy(
        "Run the tool the model asked for, and only that; in text ReAct loops stop the model at its action "
        "line so it cannot write the tool's result itself.",
        settings=("detection.content.max_answer_words", _DISABLE)),
    "FM-3.1": Remedy(
        "Feed a failed call's error back to the model and let it retry or try another way; do not end the "
        "run on an unresolved error or while most of the step budget is left.",
        settings=("detection.premature.budget_fraction", "hints.failure_patterns")),
    "FM-3.2": Remedy(
        "Turn on the verification gate: it refuses a success claim while a change made after the last "
        "check is unchecked; give the agent a check tool (kind verify) for each thing it changes.",
        guards=("verification",),
        settings=("hints.success_patterns", "hints.failure_patterns")),
    "FM-3.3": Remedy(
        "Turn on the verification gate: it refuses a success claim while the last check failed; report "
        "checks with their real verdict (mast.tool.verification.passed).",
        guards=("verification",),
        settings=("hints.success_patterns", "hints.failure_patterns")),
}


def docs_anchor(mode_id: str) -> str:
    """The anchor of a mode's section in ``docs/modes.md`` (the heading "FM-1.3 Step repetition", as
    Markdown renderers turn headings into anchors: lower case, punctuation dropped, spaces to hyphens)."""
    mode = taxonomy.get(mode_id)
    return heading_anchor(f"{mode.id} {mode.name}")


def heading_anchor(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@functools.lru_cache(maxsize=32)
def what_to_do(mode_id: str) -> WhatToDo:
    """The advice for a mode (``KeyError`` for an unknown one)."""
    mode = taxonomy.get(mode_id)
    remedy = _REMEDIES[mode.id]
    return WhatToDo(mode.id, mode.definition, remedy.prevention, remedy.guards, remedy.settings,
                    f"{DOCS_PAGE}#{docs_anchor(mode.id)}")


def known(mode_id: str) -> WhatToDo | None:
    """``what_to_do`` for a mode id that may be unknown (a judge's or a stored finding's)."""
    try:
        return what_to_do(mode_id)
    except KeyError:
        return None
