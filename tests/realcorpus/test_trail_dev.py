"""The TRAIL development runs are here and read whole: every agent and its ``Step`` spans."""

from __future__ import annotations

import pytest

from mast_otel.processors.model import AGENT
from tests.realcorpus.trail import LABELLED, ids, require_trail, runs_of


def test_the_trail_runs_are_here():
    require_trail()
    assert len(LABELLED) == 74
    assert {entry["split"] for entry in LABELLED} == {"GAIA", "SWE Bench"}


@pytest.mark.parametrize("label", LABELLED, ids=ids(LABELLED))
def test_every_labelled_agent_span_is_read(label):
    spans = {span.span_id: span for run in runs_of(label["id"]) for span in run.spans}
    for agent in label["agents"]:
        assert agent["span_id"] in spans, f"agent span {agent['name']} missing"
        assert spans[agent["span_id"]].role is AGENT, f"{agent['name']} not read as an agent"
