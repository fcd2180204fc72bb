"""The registry of rule detectors: which detector covers which failure modes, in report order,
and the tables the rest of the pipeline reads, built from what each detector declares.

``diagnose`` runs every registered detector; ``LiveDetection`` runs the ones that make a live
tracker; ``attribution`` reads which step each mode's findings blame (``Registry.decisive``);
``hints.qualify`` reads the run hints each mode's findings rest on (``Registry.run_hints``, handed
to ``hints.rests_on``, since hint derivation does not import the detectors);
live detection keeps the tool call fields the live trackers read that derivation may change
(``Registry.live_fields``). A detector outside this module joins with :func:`register`.

The taxonomy's ``covered_by`` lists ``rules`` for exactly the modes the built-in detectors
name (a test keeps the two in agreement). Modes that need reading the run for meaning (FM-2.3
derailment) have no rule detector: the judge covers them; FM-2.4 and FM-2.5 have rules for the
plain team case (a worker's report against its own failed change, a claim against a worker's
report) and the judge for the rest.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from operator import attrgetter
from typing import Callable, Mapping

from mast_otel.processors import taxonomy
from mast_otel.processors.detectors.settings import ContentConfig, HistoryConfig, PrematureConfig, RepetitionConfig, TerminationConfig
from mast_otel.processors.detectors import (budget, content_signals, history, mismatch, observations, premature, repetition,
                                            specification, teamwork, termination, verification)
from mast_otel.processors.detectors.base import DECISIVE_STEPS, DecisiveStep, Detector, Rule
from mast_otel.processors.hints import rests_on
from mast_otel.processors.model import RunHints, Span

# The fields of a tool call that hint derivation may fill in after live detection saw the span
_TOOL_READS = ("args_hash", "result_hash", "error", "error_type", "tool_kind")

DETECTORS: tuple[Detector, ...] = (
    Rule("task_constraints", ("FM-1.1",), specification.task_constraints, run_hints=("rejected_by_check",)),
    Rule("role_violations", ("FM-1.2",), specification.role_violations),
    Rule(repetition.DETECTOR, ("FM-1.3",), repetition.detect, RepetitionConfig, repetition.live_tracker,
         decisive=("first_repeat",), live_fields=_TOOL_READS),
    Rule(history.DETECTOR, ("FM-1.4", "FM-2.1"), history.detect, HistoryConfig, history.live_tracker,
         live_fields=("args_hash", "result_hash", "error", "tool_kind")),
    Rule("unaware_of_termination", ("FM-1.5",), termination.unaware_of_termination, TerminationConfig,
         budget.live_tracker, run_hints=("termination_reason",), decisive=("overrun",)),
    Rule("missing_clarification", ("FM-2.2",), specification.missing_clarification, run_hints=("claimed_success",)),
    Rule("withheld_failure", ("FM-2.4",), teamwork.withheld_failure),
    Rule("ignored_report", ("FM-2.5",), teamwork.ignored_report, run_hints=("claimed_success",)),
    Rule(mismatch.DETECTOR, ("FM-2.6",), mismatch.detect, None, mismatch.live_tracker),
    Rule(observations.DETECTOR, ("FM-2.6",), observations.detect),
    Rule("premature_termination", ("FM-3.1",), premature.premature_termination, PrematureConfig,
         run_hints=("claimed_success", "termination_reason"), decisive=("ending", "give_up")),
    Rule("no_verification", ("FM-3.2",), verification.no_verification, run_hints=("claimed_success",),
         decisive=("ending", "claim")),
    Rule("incorrect_verification", ("FM-3.3",), verification.incorrect_verification, run_hints=("claimed_success",),
         decisive=("ending", "claim")),
    Rule("repeated_work", ("FM-1.3",), content_signals.repeated_work, ContentConfig, decisive=("first_repeat",)),
    Rule("continued_after_answer", ("FM-1.5",), content_signals.continued_after_answer, ContentConfig, decisive=("overrun",)),
    Rule("answer_off_last_result", ("FM-2.6",), content_signals.answer_off_last_result, ContentConfig),
)
"""The built-in detectors (``registry().detectors`` adds the registered ones after them)."""


@dataclass(frozen=True, slots=True)
class Registry:
    """The detectors in report order and the tables built from their declarations."""

    detectors: tuple[Detector, ...]
    live: tuple[Detector, ...]  # the ones that make a live tracker
    run_hints: Mapping[str, tuple[str, ...]]  # mode -> the run hints its findings rest on
    decisive: Mapping[DecisiveStep, frozenset[str]]  # which step -> the modes whose findings blame it
    live_fields: tuple[str, ...]  # tool call fields the live trackers read that derivation may fill in
    derivable: Callable[[Span], tuple[object, ...]]  # ``live_fields`` of a span, read as one tuple

    @classmethod
    def of(cls, detectors: tuple[Detector, ...]) -> Registry:
        run_hints: dict[str, dict[str, None]] = {}
        decisive: dict[DecisiveStep, set[str]] = {step: set() for step in DECISIVE_STEPS}
        for d in detectors:
            for mode in d.modes:
                if d.run_hints:
                    run_hints.setdefault(mode, {}).update(dict.fromkeys(d.run_hints))
                for step in d.decisive:
                    decisive[step].add(mode)
        live = tuple(d for d in detectors if d.live)
        fields = tuple(dict.fromkeys(f for d in live for f in d.live_fields))
        return cls(detectors, live, {mode: tuple(names) for mode, names in run_hints.items()},
                   {step: frozenset(modes) for step, modes in decisive.items()}, fields,
                   _getter(fields))


def _getter(fields: tuple[str, ...]) -> Callable[[Span], tuple[object, ...]]:
    """``fields`` of a span as one tuple, read in C (``attrgetter`` of one field gives no tuple)."""
    if len(fields) >= 2:
        return attrgetter(fields[0], fields[1], *fields[2:])
    if fields:
        one = attrgetter(fields[0])
        return lambda span: (one(span),)
    return lambda span: ()


_RUN_HINT_FIELDS = frozenset(f.name for f in dataclasses.fields(RunHints))
_SPAN_FIELDS = frozenset(f.name for f in dataclasses.fields(Span))
_registry = Registry.of(DETECTORS)
rests_on.set_mode_run_hints(_registry.run_hints)


def registry() -> Registry:
    """The registered detectors and their tables, as they are now."""
    return _registry


def register(detector: Detector) -> None:
    """Add ``detector`` after the ones registered so far: ``diagnose``, live detection,
    attribution and ``hints.qualify`` read it from then on. Raises ``ValueError`` for a
    declaration that names what does not exist (a mode, a hint, a step, a span field) or a
    name already registered."""
    global _registry
    problems = _problems(detector)
    if problems:
        raise ValueError(f"detector {detector.name!r}: {'; '.join(problems)}")
    _registry = Registry.of((*_registry.detectors, detector))
    rests_on.set_mode_run_hints(_registry.run_hints)


def unregister(name: str) -> None:
    """Remove the registered detector called ``name`` (a built-in one too); nothing when there is none."""
    global _registry
    _registry = Registry.of(tuple(d for d in _registry.detectors if d.name != name))
    rests_on.set_mode_run_hints(_registry.run_hints)


def _problems(d: Detector) -> list[str]:
    out = []
    if any(other.name == d.name for other in _registry.detectors):
        out.append("a detector of that name is registered already")
    if not d.modes or any(m not in taxonomy.MODES for m in d.modes):
        out.append(f"modes must be taxonomy modes, got {list(d.modes)}")
    if unknown_hints := sorted(set(d.run_hints) - _RUN_HINT_FIELDS):
        out.append(f"run_hints {unknown_hints} are not RunHints fields")
    if unknown_steps := sorted(set(d.decisive) - set(DECISIVE_STEPS)):
        out.append(f"decisive {unknown_steps} are not among {list(DECISIVE_STEPS)}")
    if unknown_fields := sorted(set(d.live_fields) - _SPAN_FIELDS):
        out.append(f"live_fields {unknown_fields} are not Span fields")
    if d.live_fields and not d.live:
        out.append("live_fields declared without a live tracker")
    return out


def rule_modes() -> frozenset[str]:
    """Every mode some registered rule detector can raise."""
    return frozenset(mode for d in _registry.detectors for mode in d.modes)
