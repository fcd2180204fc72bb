from __future__ import annotations

import pytest

from mast_otel.processors import taxonomy
from mast_otel.processors.offline.scoring import Confusion, score, wilson


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
    assert empty.kappa is None  # nobody labelled it, nothing predicted it: not scored, not "perfect"
    assert Confusion(tp=4).kappa is None  # every run positive on both sides: 0/0
    assert Confusion().kappa is None
    assert Confusion(tp=0, fp=3, fn=0, tn=0).kappa == pytest.approx(0.0)  # never right beyond chance


def test_kappa_is_zero_for_chance_agreement_and_negative_below_it() -> None:
    assert Confusion(tp=25, fp=25, fn=25, tn=25).kappa == pytest.approx(0.0)
    assert Confusion(tp=0, fp=5, fn=5, tn=0).kappa == pytest.approx(-1.0)


def test_score_per_mode_and_macro_over_scored_covered_modes() -> None:
    pairs = [
        ({"FM-1.3": True, "FM-2.3": True}, {"FM-1.3"}),
        ({"FM-1.3": False}, {"FM-1.3"}),
        ({}, set()),
        ({"FM-1.5": True}, set()),
    ]
    s = score(pairs, ["FM-1.3", "FM-1.5", "FM-2.3", "FM-3.1"], macro_modes=["FM-1.3", "FM-1.5", "FM-3.1"], resamples=50)
    c13 = s.per_mode["FM-1.3"].confusion
    assert (c13.tp, c13.fp) == (1, 1)
    assert s.per_mode["FM-2.3"].confusion.fn == 1  # scored, but outside the macro scope
    # FM-3.1: no support, no predictions: not scored, not in the macro
    assert not s.per_mode["FM-3.1"].confusion.scored and s.macro_modes == ("FM-1.3", "FM-1.5")
    # FM-1.5 has no predictions: its precision is undefined and left out; its recall is 0.
    assert s.macro["precision"] == pytest.approx(0.5)
    assert s.macro["recall"] == pytest.approx(0.5)
    out = s.as_dict()
    assert out["macro_modes"] == ["FM-1.3", "FM-1.5"] and "micro" not in out
    assert out["modes"]["FM-1.3"]["precision_ci"] == [round(v, 4) for v in wilson(1, 2)]


def test_a_constant_judge_gets_kappa_zero_on_every_mode_and_in_the_macro() -> None:
    """"Always FM-1.3 and FM-3.3" knows nothing about the runs, whatever the label prevalence."""
    labels = [
        {"FM-1.1": True, "FM-1.3": True, "FM-2.6": False},
        {"FM-1.3": False, "FM-3.3": True, "FM-2.6": True},
        {"FM-1.1": True, "FM-3.3": False},
        {"FM-2.6": True, "FM-1.3": True, "FM-3.3": True},
        {},
    ]
    s = score([(lab, {"FM-1.3", "FM-3.3"}) for lab in labels], taxonomy.MODE_IDS, resamples=50)
    kappas = {m: ms.confusion.kappa for m, ms in s.per_mode.items() if ms.confusion.scored}
    assert set(kappas) == {"FM-1.1", "FM-1.3", "FM-2.6", "FM-3.3"}
    assert all(k == pytest.approx(0.0) for k in kappas.values())
    assert s.macro["kappa"] == pytest.approx(0.0)
    assert s.macro_modes == ("FM-1.1", "FM-1.3", "FM-2.6", "FM-3.3")


def test_allowed_labels_leave_the_run_out_of_that_mode() -> None:
    s = score([({"FM-3.1": None, "FM-3.3": True}, {"FM-3.1", "FM-3.3"}), ({"FM-3.1": True}, {"FM-3.1"})],
              ["FM-3.1", "FM-3.3"], resamples=10)
    assert s.per_mode["FM-3.1"].confusion == Confusion(tp=1)
    assert s.per_mode["FM-3.3"].confusion == Confusion(tp=1, tn=1)


def test_intervals_contain_the_figure_and_narrow_with_more_runs() -> None:
    small = [({"FM-1.3": i % 2 == 0}, {"FM-1.3"} if i % 3 else set()) for i in range(30)]
    big = small * 10
    s_small, s_big = (score(p, ["FM-1.3"], resamples=200).per_mode["FM-1.3"] for p in (small, big))
    for ms in (s_small, s_big):
        for name in ("precision", "recall", "f1", "kappa"):
            lo, hi = ms.intervals[name]
            assert lo <= getattr(ms.confusion, name) + 1e-9 and getattr(ms.confusion, name) <= hi + 1e-9
    width = lambda ms, name: ms.intervals[name][1] - ms.intervals[name][0]  # noqa: E731
    assert width(s_big, "recall") < width(s_small, "recall") and width(s_big, "kappa") < width(s_small, "kappa")
