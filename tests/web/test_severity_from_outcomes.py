"""Prevalence in failed versus successful runs, its lift and intervals: the pure functions."""

from __future__ import annotations

import math

import pytest
import yaml

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.store.diagnoses import ModeCounts, ModelCounts
from mast_otel.processors.severity_from_outcomes import (
    ALL_MODELS, ModeEvidence, adopted_overrides, config_lines, evidence_by_model, lift_interval, wilson,
)


def evidence(in_failed: int, failed: int, in_successful: int, successful: int, default="recoverable", minimum=20):
    return ModeEvidence("FM-1.3", failed, successful, in_failed, in_successful, default, minimum)


def test_wilson_matches_the_closed_form():
    # 0 of 10 has upper bound z^2 / (n + z^2); 10 of 10 mirrors it
    z2 = 1.959963984540054 ** 2
    assert wilson(0, 10).low == 0.0
    assert wilson(0, 10).high == pytest.approx(z2 / (10 + z2))
    assert wilson(10, 10).low == pytest.approx(1 - z2 / (10 + z2))
    half = wilson(5, 10)
    assert half.low == pytest.approx(1 - half.high)  # symmetric around 1/2
    assert wilson(3, 0) is None
    with pytest.raises(ValueError):
        wilson(11, 10)


@pytest.mark.parametrize("k,n", [(1, 7), (13, 40), (99, 100), (250, 1000)])
def test_wilson_holds_the_estimate_and_narrows_with_more_runs(k, n):
    interval = wilson(k, n)
    assert interval.low < k / n < interval.high
    wider = wilson(k, n)
    narrower = wilson(4 * k, 4 * n)
    assert narrower.high - narrower.low < wider.high - wider.low


def test_lift_is_the_ratio_of_prevalences_with_the_katz_interval():
    ratio, interval = lift_interval(30, 100, 10, 100)
    assert ratio == pytest.approx(3.0)
    se = math.sqrt(1 / 30 - 1 / 100 + 1 / 10 - 1 / 100)
    assert interval.low == pytest.approx(3 * math.exp(-1.959963984540054 * se))
    assert interval.high == pytest.approx(3 * math.exp(1.959963984540054 * se))
    assert interval.low < ratio < interval.high


def test_lift_with_a_zero_cell_is_finite_and_wide():
    ratio, interval = lift_interval(12, 12, 0, 12)
    assert math.isfinite(ratio) and math.isfinite(interval.high)
    assert interval.low > 1  # always in failed runs, never in successful ones: it separates them
    assert lift_interval(0, 10, 0, 10) is None  # never seen: nothing to say
    assert lift_interval(3, 10, 1, 0) is None  # no successful runs to compare with
    with pytest.raises(ValueError):
        lift_interval(11, 10, 1, 10)


def test_suggestion_needs_enough_outcomes_and_reads_the_interval():
    assert evidence(9, 10, 0, 5).suggested is None  # 15 runs < 20
    assert evidence(12, 12, 0, 12).suggested == "fatal"
    assert evidence(6, 12, 6, 12).suggested == "recoverable"  # as common in successful runs
    assert evidence(0, 12, 0, 12).suggested is None
    assert evidence(12, 24, 0, 0, minimum=1).suggested is None  # no successful run at all
    e = evidence(12, 12, 0, 12)
    assert e.prevalence_failed == 1.0 and e.prevalence_successful == 0.0


def test_adopting_keeps_other_overrides_and_the_line_is_valid_config():
    found = [evidence(12, 12, 0, 12), ModeEvidence("FM-2.2", 12, 12, 6, 6, "fatal", 20)]
    adopted = adopted_overrides(found, {"FM-3.2": "fatal"})
    assert adopted == {"FM-1.3": "fatal", "FM-2.2": "recoverable", "FM-3.2": "fatal"}
    assert adopted_overrides([evidence(12, 12, 0, 12, default="fatal")], {}) == {}
    yaml_line, env_line = config_lines(adopted)
    config = ProcessorConfig(**yaml.safe_load("detection:\n  " + yaml_line))
    assert config.detection.severity_overrides == adopted
    name, _, value = env_line.partition("=")
    assert name == "MAST_OTEL_DETECTION__SEVERITY_OVERRIDES" and yaml.safe_load(value.strip("'")) == adopted


def test_evidence_groups_all_models_first_then_each_model():
    models = [ModelCounts("a", 30, 10, 20, 5, 40), ModelCounts("b", 10, 5, 5, 0, 5), ModelCounts(None, 3, 0, 0, 0, 0)]
    modes = [ModeCounts("a", "FM-1.3", "failure", 15), ModeCounts("a", "FM-1.3", "success", 1),
             ModeCounts("b", "FM-1.3", "failure", 2), ModeCounts("b", "FM-1.3", None, 4)]
    by_model = evidence_by_model(models, modes, lambda m: "recoverable", 20)
    assert list(by_model) == [ALL_MODELS, "(unknown)", "a", "b"]
    total = next(e for e in by_model[ALL_MODELS] if e.mode == "FM-1.3")
    assert (total.failed, total.successful, total.in_failed, total.in_successful) == (25, 15, 17, 1)
    only_b = next(e for e in by_model["b"] if e.mode == "FM-1.3")
    assert (only_b.in_failed, only_b.in_successful, only_b.enough) == (2, 0, False)  # 10 known outcomes < 20
