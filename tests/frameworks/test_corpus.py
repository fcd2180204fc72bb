"""Diagnosis of what real agent frameworks' own instrumentation exported (tests/frameworks/corpus).

Every recording is one scripted run of a scenario through a framework and its OpenTelemetry
instrumentation, with no mast-otel hints. The expectations come from the scenario alone, the
same for every framework: a slip's mode must be found, near misses and clean runs must stay
quiet. Without content capture, only false alarms are checked: what can still be seen depends
on what each instrumentation keeps (docs/frameworks.md has the measured table).
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.model import Run
from tests.frameworks.corpus_files import Recording, manifests, recordings

RECORDINGS = recordings()
RULE_MODES = ("FM-1.3", "FM-1.4", "FM-1.5", "FM-3.1", "FM-3.2", "FM-3.3")


def the_run(recording: Recording) -> Run:
    runs = [r for r in load_runs([recording.path]) if r.steps]
    assert len(runs) == 1, f"{recording.id}: expected one run with steps, got {len(runs)}"
    return runs[0]


def modes(recording: Recording) -> set[str]:
    return {f.mode for f in rule_findings(the_run(recording))}


def test_the_corpus_covers_several_frameworks_with_every_scenario_kind():
    assert len(manifests()) >= 6
    scenarios = {r.scenario.name for r in RECORDINGS}
    assert {"clean", "loop", "poll", "limit", "tool_error", "retry_ok", "unchecked", "failed_check", "recheck"} <= scenarios


@pytest.mark.parametrize("recording", [r for r in RECORDINGS if r.variant == "content"], ids=lambda r: r.id)
def test_with_content_the_slip_is_found_and_nothing_else(recording):
    found = modes(recording)
    scenario = recording.scenario
    assert scenario.expected <= found, f"missed {sorted(scenario.expected - found)}"
    assert found <= scenario.expected | scenario.allowed, f"false alarm {sorted(found - scenario.expected - scenario.allowed)}"


@pytest.mark.parametrize("recording", [r for r in RECORDINGS if r.variant == "no-content"], ids=lambda r: r.id)
def test_without_content_there_is_no_false_alarm(recording):
    found = modes(recording)
    scenario = recording.scenario
    assert found <= scenario.expected | scenario.allowed, f"false alarm {sorted(found - scenario.expected - scenario.allowed)}"


def test_each_rule_mode_fires_on_at_least_four_frameworks():
    frameworks = defaultdict(set)
    for recording in RECORDINGS:
        if recording.variant == "content":
            for mode in recording.scenario.expected & modes(recording):
                frameworks[mode].add(recording.framework)
    assert {mode: len(frameworks[mode]) for mode in RULE_MODES} == {mode: max(4, len(frameworks[mode])) for mode in RULE_MODES}


def test_findings_that_rest_on_derived_hints_say_so_and_are_less_sure():
    """Tool kinds and claims are inferred on these runs: no finding may present them as given."""
    checked = 0
    for recording in RECORDINGS:
        if recording.variant != "content" or recording.scenario.name not in ("unchecked", "failed_check"):
            continue
        for finding in rule_findings(the_run(recording)):
            if finding.mode in ("FM-3.2", "FM-3.3"):
                assert "derived hints:" in finding.explanation and finding.confidence < 0.9
                checked += 1
    assert checked >= 8


def test_runs_are_labelled_with_the_agent_and_one_name_per_model():
    """The agent, not the workflow around it, a method it ran or an id; no provider prefix on models."""
    agents, models = set(), set()
    for recording in RECORDINGS:
        run = the_run(recording)
        agents.add(run.agent)
        models.add(run.model)
    assert None not in agents and None not in models
    assert not [a for a in agents if re.search(r"workflow|\.\w+$|[0-9a-f]{8}-[0-9a-f]{4}|^(model|tools|agent)$", a, re.I)], agents
    assert {"sre-agent", "sre_agent"} & agents
    assert not [m for m in models if "/" in m], models


def test_the_corpus_label_file_says_what_the_scenarios_say():
    """``mast-otel eval tests/frameworks/corpus`` reads labels.json; it must not drift from scenarios.py."""
    import json

    from tests.frameworks.corpus_files import CORPUS, scenario_labels

    assert json.loads((CORPUS / "labels.json").read_text()) == scenario_labels()
