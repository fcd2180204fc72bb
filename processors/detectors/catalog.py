"""The registry of rule detectors: which detector covers which failure modes, in report order.

``diagnose`` runs every entry; ``LiveDetection`` runs the entries that make a live tracker.
The taxonomy's ``covered_by`` lists ``rules`` for exactly the modes named here (a test
keeps the two in agreement). Modes that need reading the run for meaning (FM-2.3 derailment) have
no rule detector: the judge covers them; FM-2.4 and FM-2.5 have rules for the plain team case
(a worker's report against its own failed change, a claim against a worker's report) and the
judge for the rest.
"""

from __future__ import annotations

from mast_otel.processors.detectors.settings import ContentConfig, HistoryConfig, PrematureConfig, RepetitionConfig, TerminationConfig
from mast_otel.processors.detectors import (budget, content_signals, history, mismatch, observations, repetition, specification,
                                            teamwork, termination, verification)
from mast_otel.processors.detectors.base import Detector, Rule

DETECTORS: tuple[Detector, ...] = (
    Rule("task_constraints", ("FM-1.1",), specification.task_constraints),
    Rule("role_violations", ("FM-1.2",), specification.role_violations),
    Rule(repetition.DETECTOR, ("FM-1.3",), repetition.detect, RepetitionConfig, repetition.live_tracker),
    Rule(history.DETECTOR, ("FM-1.4", "FM-2.1"), history.detect, HistoryConfig, history.live_tracker),
    Rule("unaware_of_termination", ("FM-1.5",), termination.unaware_of_termination, TerminationConfig,
         budget.live_tracker),
    Rule("missing_clarification", ("FM-2.2",), specification.missing_clarification),
    Rule("withheld_failure", ("FM-2.4",), teamwork.withheld_failure),
    Rule("ignored_report", ("FM-2.5",), teamwork.ignored_report),
    Rule(mismatch.DETECTOR, ("FM-2.6",), mismatch.detect, None, mismatch.live_tracker),
    Rule(observations.DETECTOR, ("FM-2.6",), observations.detect),
    Rule("premature_termination", ("FM-3.1",), termination.premature_termination, PrematureConfig),
    Rule("no_verification", ("FM-3.2",), verification.no_verification),
    Rule("incorrect_verification", ("FM-3.3",), verification.incorrect_verification),
    Rule("repeated_work", ("FM-1.3",), content_signals.repeated_work, ContentConfig),
    Rule("continued_after_answer", ("FM-1.5",), content_signals.continued_after_answer, ContentConfig),
    Rule("answer_off_last_result", ("FM-2.6",), content_signals.answer_off_last_result, ContentConfig),
)


def rule_modes() -> frozenset[str]:
    """Every mode some rule detector can raise."""
    return frozenset(mode for d in DETECTORS for mode in d.modes)
