"""Each slip a simulated model can be scripted to make, planted alone in one run, is found as its mode;
the same incident without the slip is not accused of it. These replace figures pinned to fixed seeds:
they hold however the detectors are tuned, as long as they find what was planted."""

from __future__ import annotations

import pytest


def _scenario(**kwargs):
    from mast_otel.demo.agent import Scenario
    from mast_otel.demo.environment import INCIDENT_KINDS

    return Scenario(kind=INCIDENT_KINDS[0], **kwargs)


# (slips planted, scenario shape, the mode they must show as)
PLANTED = [
    ({"loop": True}, {}, "FM-1.3"),
    ({"overrun": True}, {"max_steps": 14}, "FM-1.5"),
    ({"skip_verify": True}, {}, "FM-3.2"),
    ({"wrong_fix": True, "after_failed_check": "claim"}, {}, "FM-3.3"),
    ({"wrong_fix": True, "after_failed_check": "give_up"}, {}, "FM-3.1"),
    ({"skip_clarify": True}, {"ambiguous": True}, "FM-2.2"),
    ({"break_read_only": True}, {"read_only": True}, "FM-1.1"),
]


@pytest.mark.parametrize("temper, shape, mode", PLANTED, ids=[m for _, _, m in PLANTED])
def test_a_planted_slip_is_found_and_the_same_incident_without_it_is_not_accused(planted_run, temper, shape, mode):
    slipped = planted_run(temper, _scenario(**shape), guarded=False)
    clean = planted_run({}, _scenario(**shape), guarded=False)
    assert mode in slipped.modes, slipped.modes
    assert mode not in clean.modes, clean.modes


def test_a_run_without_any_slip_is_diagnosed_clean(planted_run):
    clean = planted_run({}, _scenario(), guarded=False)
    assert clean.modes == {} and clean.result.outcome == "success"
