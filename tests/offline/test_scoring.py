from __future__ import annotations

import pytest

from mast_otel.processors.offline.scoring import Confusion, score


def test_confusion_metrics_by_hand() -> None:
    c = Confusion(tp=8, fp=2, fn=4, tn=86)
    assert c.precision == pytest.approx(0.8)
    assert c.recall == pytest.approx(8 / 12)
    assert c.f1 == pytest.approx(16 / 22)
    # observed 0.94; chance = (10*12 + 90*88) / 100^2 = 0.804
    assert c.kappa == pytest.approx((0.94 - 0.804) / (1 - 0.804))
    assert (c.support, c.predicted, c.n) == (12, 10, 100)


def test_undefined_ratios_and_degenerate_kappa() -> None:
    empty = Confusion(tn=5)
    assert empty.precision is None and empty.recall is None and empty.f1 is None
    assert empty.kappa == 1.0  # perfect agreement on an all-negative mode
    assert Confusion().kappa is None
    assert Confusion(tp=0, fp=3, fn=0, tn=0).kappa == pytest.approx(0.0)  # never right beyond chance


def test_kappa_is_zero_for_chance_agreement_and_negative_below_it() -> None:
    assert Confusion(tp=25, fp=25, fn=25, tn=25).kappa == pytest.approx(0.0)
    assert Confusion(tp=0, fp=5, fn=5, tn=0).kappa == pytest.approx(-1.0)


def test_score_per_mode_micro_and_macro_over_covered_modes() -> None:
    pairs = [
        ({"FM-1.3": True, "FM-2.3": True}, {"FM-1.3"}),
        ({"FM-1.3": False}, {"FM-1.3"}),
        ({}, set()),
        ({"FM-1.5": True}, set()),
    ]
    s = score(pairs, ["FM-1.3", "FM-1.5", "FM-2.3"], macro_modes=["FM-1.3", "FM-1.5"])
    assert (s.per_mode["FM-1.3"].tp, s.per_mode["FM-1.3"].fp) == (1, 1)
    assert s.per_mode["FM-2.3"].fn == 1  # scored, but outside the macro scope
    micro = s.micro
    assert (micro.tp, micro.fp, micro.fn) == (1, 1, 1)
    # FM-1.5 has no predictions: its precision is undefined and left out; its recall is 0.
    assert s.macro["precision"] == pytest.approx(0.5)
    assert s.macro["recall"] == pytest.approx(0.5)
    assert s.as_dict()["macro_modes"] == ["FM-1.3", "FM-1.5"]
