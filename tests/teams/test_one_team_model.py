"""One team model across instrumentations: the same team run recorded through two instrumentations
gives the same agents, the same handoffs and the same tool ownership.

Each pair is one framework's recorder run through two instrumentations against the same scripted
stub model, so what the team did is the same: only the spans differ.
"""

from __future__ import annotations

import pytest

from mast_otel.processors.hints import derive_hints
from mast_otel.processors.model import Run
from mast_otel.processors.team import build_team, fold, is_handoff
from tests.frameworks.test_corpus import the_run
from tests.teams.corpus_files import recordings

# framework -> the two recordings of its team (corpus folder names)
PAIRS = {
    "openai-agents": ("openai-agents-handoffs", "openai-agents-openllmetry"),
    "agno": ("agno-openinference", "agno-openllmetry"),
    "autogen": ("autogen", "autogen-openinference"),
    "langgraph": ("langgraph-openinference", "langgraph-openllmetry"),
    "google-adk": ("google-adk", "google-adk-openinference"),
    "crewai": ("crewai", "crewai-openllmetry"),
}
# recordings whose instrumentation writes no tool spans: only agents and handoffs can be compared
NO_TOOL_SPANS = {"crewai-openllmetry": "OpenLLMetry's CrewAI instrumentation (0.62.4) records no tool call"}
# frameworks compared with content only: without it one of the two cannot name the members
CONTENT_ONLY = {"crewai": "OpenInference's CrewAI spans name a delegated coworker only in the delegation's redacted input"}

BY_KEY = {(r.framework, r.variant, r.scenario.name): r for r in recordings()}
CASES = [(framework, variant, scenario)
         for framework, (one, other) in PAIRS.items()
         for (folder, variant, scenario) in sorted(BY_KEY) if folder == one and (other, variant, scenario) in BY_KEY
         and (variant == "content" or framework not in CONTENT_ONLY)]


def team_view(run: Run) -> dict:
    """What the team model says of a run, in names both instrumentations share."""
    run = derive_hints(run)
    team = build_team(run)
    owners = [(fold(a.agent_name) if (a := run.agent_of(s)) is not None and a.agent_name else None,
               fold(s.tool_name or s.name))
              for s in run.tool_calls if not is_handoff(s)]
    return {
        "agents": sorted(fold(a) for a in team.agents),
        "handoffs": [(fold(h.source or "?"), fold(h.target or "?")) for h in team.handoffs],
        "tool owners": owners,
    }


def test_every_framework_with_two_instrumentations_is_compared():
    assert {framework for framework, _, _ in CASES} == set(PAIRS)


@pytest.mark.parametrize("framework,variant,scenario", CASES, ids=lambda v: str(v))
def test_the_same_team_reads_the_same_through_both_instrumentations(framework, variant, scenario):
    one, other = PAIRS[framework]
    a = team_view(the_run(BY_KEY[(one, variant, scenario)]))
    b = team_view(the_run(BY_KEY[(other, variant, scenario)]))
    assert len(a["agents"]) >= 2 and a["handoffs"], a  # a team, not one agent
    assert all(owner in a["agents"] for owner, _ in a["tool owners"]), a  # every tool call has its agent
    if other in NO_TOOL_SPANS:
        del a["tool owners"], b["tool owners"]
    assert a == b
