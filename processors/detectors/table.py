"""The detector table: which pure function covers which failure modes.

The registry's ``covered_by`` lists ``rules`` for exactly the modes named here (a test keeps
the two in agreement). Modes that need reading the run for meaning (FM-2.3 derailment, FM-2.4
withholding, FM-2.5 ignored input) have no rule detector: the judge covers them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mast_otel.processors.detectors import content, history, mismatch, repetition, specification, termination, verification
from mast_otel.processors.detectors.context import RunContext
from mast_otel.processors.model import Finding


@dataclass(frozen=True, slots=True)
class Detector:
    name: str
    modes: tuple[str, ...]
    detect: Callable[[RunContext], list[Finding]]


DETECTORS: tuple[Detector, ...] = (
    Detector("task_constraints", ("FM-1.1",), specification.task_constraints),
    Detector("role_violations", ("FM-1.2",), specification.role_violations),
    Detector("repetition", ("FM-1.3",), repetition.detect),
    Detector("history", ("FM-1.4", "FM-2.1"), history.detect),
    Detector("unaware_of_termination", ("FM-1.5",), termination.unaware_of_termination),
    Detector("missing_clarification", ("FM-2.2",), specification.missing_clarification),
    Detector("mismatch", ("FM-2.6",), mismatch.detect),
    Detector("premature_termination", ("FM-3.1",), termination.premature_termination),
    Detector("no_verification", ("FM-3.2",), verification.no_verification),
    Detector("incorrect_verification", ("FM-3.3",), verification.incorrect_verification),
    Detector("repeated_work", ("FM-1.3",), content.repeated_work),
    Detector("continued_after_answer", ("FM-1.5",), content.continued_after_answer),
    Detector("answer_off_last_result", ("FM-2.6",), content.answer_off_last_result),
)


def rule_modes() -> frozenset[str]:
    """Every mode some rule detector can raise."""
    return frozenset(mode for d in DETECTORS for mode in d.modes)
