"""Diagnosis of what TypeScript agents' own instrumentation exported (tests/typescript/corpus).

The same scenarios as the Python framework corpus, run under Node through the Vercel AI SDK
(AI SDK 7's default GenAI spans and its legacy ``ai.*`` spans, AI SDK 6's ``ai.*`` spans) and
Mastra, recorded by ``tests/typescript/record``; the committed OTLP files need no Node here.
Every run goes through the framework's step limit, which ends the loop without an error.
"""

from __future__ import annotations

import json

import pytest

from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.model import Role
from tests.frameworks.corpus_files import manifests, recordings, scenario_labels
from tests.frameworks.test_corpus import modes, the_run
from tests.typescript.recorder import CORPUS, SETUPS

RECORDINGS = recordings(CORPUS)
AI_SPANS = ("ai-sdk-7-legacy", "ai-sdk-6")  # the ai.* dialect


def test_every_setup_is_recorded_with_and_without_content():
    assert set(manifests(CORPUS)) == {s.name for s in SETUPS}
    for setup in SETUPS:
        for variant in ("content", "no-content"):
            scenarios = {r.scenario.name for r in RECORDINGS if r.framework == setup.name and r.variant == variant}
            assert {"clean", "loop", "poll", "limit", "tool_error", "unchecked", "failed_check"} <= scenarios, (setup.name, variant)


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


@pytest.mark.parametrize("recording", [r for r in RECORDINGS if r.framework in AI_SPANS], ids=lambda r: r.id)
def test_the_ai_spans_give_the_agent_its_model_calls_and_its_tool_calls(recording):
    run = the_run(recording)
    manifest = manifests(CORPUS)[recording.framework]["runs"][recording.scenario.name]
    assert run.agent == "sre-agent" and run.root is not None and run.root.name in ("ai.generateText", "ai.streamText")
    assert [s.tool_name for s in run.steps if s.role is Role.TOOL] == manifest["tool_calls"]
    assert len(run.llm_calls) == manifest["model_calls"]
    assert all(s.finish_reasons for s in run.llm_calls)


def _quiet(recording) -> bool:
    """The run ended without an error (the OpenAI Agents SDK's maxTurns raises; the AI SDK's and Mastra's limits do not)."""
    return manifests(CORPUS)[recording.framework]["runs"][recording.scenario.name]["raised"] is None


@pytest.mark.parametrize("recording", [r for r in RECORDINGS if r.scenario.name == "limit" and _quiet(r)], ids=lambda r: r.id)
def test_a_step_limit_that_stops_quietly_is_found_and_says_how(recording):
    """stopWhen: stepCountIs(n) and Mastra's maxSteps raise nothing: the run just ends on a turn that asked for tools."""
    [finding] = [f for f in rule_findings(the_run(recording)) if f.mode == "FM-1.5"]
    assert "ended on a model turn that asked for tools" in finding.explanation


def test_the_label_file_says_what_the_scenarios_say_and_eval_scores_the_corpus(capsys):
    """``mast-otel eval tests/typescript/corpus`` scores the corpus per mode from labels.json."""
    from mast_otel.processors.cli import main

    assert json.loads((CORPUS / "labels.json").read_text()) == scenario_labels()
    assert main(["eval", str(CORPUS), "--format", "json", "--resamples", "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["runs"] == len(RECORDINGS) and all(out["modes"][m]["fp"] == 0 for m in out["modes"])
    assert out["modes"]["FM-1.5"]["tp"] == len(SETUPS) * 2  # the limit, with content on and off


def test_every_run_is_labelled_with_its_agent_and_model():
    """The agent the user named (functionId, the agent's name), not an operation, a step or a model id."""
    labels = {(the_run(r).agent, the_run(r).model) for r in RECORDINGS}
    assert {agent for agent, _ in labels} == {"sre-agent"}
    assert {model for _, model in labels} <= {"gpt-4o-mini", "gpt-4o-mini-2024-07-18"}
