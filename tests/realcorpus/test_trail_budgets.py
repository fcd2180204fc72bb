"""FM-1.5 on the TRAIL development runs, in the unit smolagents counts: ``Step N`` spans per agent run.

smolagents holds each run of an agent (each ``.run`` span: a managed agent called three times runs
three times) to its ``max_steps`` action steps, one ``Step N`` span each, and stops it once they
reach the budget. Planning calls and the answer it asks for at the limit are in no step. So FM-1.5
is found exactly where some agent's ``Step`` spans reached its ``max_steps`` (``labels.json``
counts them per agent span), it names that agent, and it goes on the step that used the budget up;
live detection raises none the diagnosis does not.
"""

from __future__ import annotations

import pytest

from mast_otel.processors.attribution import attribute, with_agents
from mast_otel.processors.detectors.live import LiveDetection
from mast_otel.processors.model import AGENT
from tests.realcorpus.trail import LABELLED, findings_of, ids, require_trail, runs_of

UNAWARE = "FM-1.5"


def _spent(label: dict) -> list[dict]:
    """The agent spans whose ``Step`` spans reached their ``max_steps``."""
    return [a for a in label["agents"] if a["max_steps"] and a["steps"] >= a["max_steps"]]


@pytest.mark.parametrize("label", LABELLED, ids=ids(LABELLED))
def test_fm15_exactly_where_an_agents_steps_reached_its_budget(label):
    require_trail()
    found = [f for f in findings_of(label["id"]) if f.mode == UNAWARE]
    spent = _spent(label)
    assert bool(found) == bool(spent), [f.explanation for f in found] or f"missed: {spent}"
    for agent in spent:
        budget = agent["max_steps"]
        assert any(f"{agent['steps']} of {budget} action steps, as smolagents counts them" in f.explanation
                   for f in found), [f.explanation for f in found]


@pytest.mark.parametrize("label", [entry for entry in LABELLED if _spent(entry)], ids=ids([e for e in LABELLED if _spent(e)]))
def test_fm15_goes_on_the_step_that_used_the_budget_up_and_names_its_agent(label):
    require_trail()
    spent_ids = {a["span_id"] for a in _spent(label)}
    for run in runs_of(label["id"]):
        found = [f for f in findings_of(label["id"]) if f.mode == UNAWARE and f.span_id in run.spans_by_id]
        for f in found:
            step = run.spans_by_id[f.span_id]
            agent = run.agent_of(step)
            assert step.role is not AGENT and agent is not None and agent.span_id in spent_ids
            assert f"agent {agent.agent_name!r}" in f.explanation
            [named] = with_agents(run, [f])
            blamed = attribute(run, [f])
            assert named.agent == agent.agent_name and blamed is not None and blamed.agent == agent.agent_name
            assert blamed.step_span_id == f.span_id


@pytest.mark.parametrize("label", LABELLED, ids=ids(LABELLED))
def test_live_raises_no_fm15_the_diagnosis_does_not(label):
    """Every span fed as it ends (each step already under its agent: the most live could see)."""
    require_trail()
    diagnosed = any(f.mode == UNAWARE for f in findings_of(label["id"]))
    for run in runs_of(label["id"]):
        live = LiveDetection()
        raised = [f for span in sorted(run.spans, key=lambda s: s.end_ns) for f in live.observe(span) if f.mode == UNAWARE]
        assert not raised or diagnosed, [f.explanation for f in raised]
