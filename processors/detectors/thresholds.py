"""Every tunable number the rule detectors read, with its default and what it means.

Users set them in ``detection.thresholds`` (YAML) or ``MAST_OTEL_DETECTION__THRESHOLDS``
(JSON); unknown keys are rejected by the configuration model, so a typo never silently
falls back to a default.
"""

from __future__ import annotations

from typing import Mapping

# key -> (default, meaning)
DEFAULTS: Mapping[str, tuple[float, str]] = {
    "repetition.min_tool_repeats": (
        3,
        "FM-1.3: calls of one tool with the same arguments that return the same result in a row "
        "before the run counts as looping (a changed result resets the count: polling that sees "
        "progress is not repetition).",
    ),
    "repetition.min_output_repeats": (
        3,
        "FM-1.3: times the same model output (whitespace and case ignored) may appear before it "
        "counts as repetition. Needs captured content.",
    ),
    "repetition.min_output_chars": (
        60,
        "FM-1.3: shorter model outputs (a line of a few words, such as an acknowledgement or a "
        "turn-passing line) are ignored by the repeated-output check: repeating them is protocol, "
        "not repeated work.",
    ),
    "termination.default_max_steps": (
        0,
        "FM-1.5: step budget for agents that declare none (mast.task.max_steps); 0 disables it. "
        "Lets live detection flag a runaway run before its agent span ends.",
    ),
    "termination.steps_after_success": (
        4,
        "FM-1.5: tool calls after the run's last verification passed that count as working past "
        "the task's success evidence.",
    ),
    "premature.budget_fraction": (
        0.5,
        "FM-3.1: a run that gives up (claims no success) having used at most this share of its "
        "step budget stopped with budget left.",
    ),
    "history.drop_ratio": (
        0.5,
        "FM-1.4: an agent's input message count falling to this share of its running maximum or "
        "below is lost history.",
    ),
    "history.min_messages": (
        4,
        "FM-1.4/FM-2.1: drops are only judged once an agent's context has held this many messages.",
    ),
    "content.repeated_work_similarity": (
        0,
        "FM-1.3 content signal: a model output or tool input sharing at least this share of its "
        "word 3-shingles (Jaccard) with an earlier step of the same agent repeats work; 0 disables "
        "it (the benchmark measures 0.8).",
    ),
    "content.calls_after_answer": (
        0,
        "FM-1.5 content signal: tool calls after the one that already produced the final answer's "
        "value; 0 disables it (the benchmark measures 2).",
    ),
    "content.max_answer_words": (
        0,
        "FM-2.6 content signal: final answers of at most this many words are checked against the "
        "values the last successful tool call computed (longer answers are prose, not values); "
        "also bounds the answers the FM-1.5 content signal reads; 0 disables it (the benchmark "
        "measures 8).",
    ),
}


def threshold(thresholds: Mapping[str, float], key: str) -> float:
    """The configured value for ``key``, else its default."""
    value = thresholds.get(key)
    return DEFAULTS[key][0] if value is None else value


def unknown_keys(thresholds: Mapping[str, float]) -> list[str]:
    return sorted(set(thresholds) - set(DEFAULTS))
