"""Guard adapters with the real frameworks (OpenAI Agents SDK, Pydantic AI) against the local stub model.

Each framework runs in its own virtual environment (``.corpus-envs/<id>``, made by
``scripts/corpus-envs`` from ``tests/frameworks/envs/<id>.txt``; ``scripts/test`` makes them), so
neither enters the product's install or test extras. The driver prints the spans it recorded
and what the model was sent; the assertions are on those.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = {"openai-agents": "openai_agents", "pydantic-ai": "pydantic_ai"}


def drive(framework: str, scenario: str, mode: str) -> dict:
    python = ROOT / ".corpus-envs" / framework / "bin" / "python"
    if not python.exists():
        pytest.fail(f"{python} is missing: run scripts/corpus-envs {framework} (scripts/test does)")
    done = subprocess.run([str(python), "-m", f"tests.frameworks.guard_runs.{FRAMEWORKS[framework]}", scenario, mode],
                          cwd=ROOT, capture_output=True, text=True, timeout=180,
                          env=dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def interventions(recorded: dict) -> list[dict]:
    return [e["attributes"] for s in recorded["spans"] for e in s["events"] if e["name"] == "mast.guard.intervention"]


def refusals_seen(recorded: dict) -> list[str]:
    return [text for request in recorded["model_saw"] for text in request if text and "mast.guard." in text]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_loop_guard_enforced_through_the_framework_hooks(framework):
    recorded = drive(framework, "loop", "enforce")
    (event,) = interventions(recorded)
    assert (event["mast.guard.name"], event["mast.guard.action"], event["mast.failure_mode"]) == ("loop", "blocked", "FM-1.3")
    assert any("mast.guard.loop" in text for text in refusals_seen(recorded))  # the model was told why
    assert recorded["outcome"].startswith("NOT RESOLVED")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_verification_gate_enforced_through_the_framework_hooks(framework):
    recorded = drive(framework, "unchecked", "enforce")
    (event,) = interventions(recorded)
    assert (event["mast.guard.name"], event["mast.guard.action"], event["mast.failure_mode"]) == (
        "verification", "refused_finish", "FM-3.2")
    root = next(s for s in recorded["spans"] if s["name"] == "invoke_agent sre-agent")
    assert root["span_id"] in event["mast.evidence.span_ids"]
    last_request = recorded["model_saw"][-1]
    assert any("never checked" in (text or "") for text in last_request)  # the refusal reached the model
    assert any("passed" in (text or "") for text in last_request)  # and it checked before claiming again
    assert recorded["outcome"].startswith("RESOLVED")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_observe_mode_records_and_the_framework_runs_unchanged(framework):
    looped = drive(framework, "loop", "observe")
    assert [(e["mast.guard.name"], e["mast.guard.action"]) for e in interventions(looped)] == [("loop", "recorded")]
    assert refusals_seen(looped) == []  # the model saw four real results
    unchecked = drive(framework, "unchecked", "observe")
    assert [(e["mast.guard.name"], e["mast.guard.action"]) for e in interventions(unchecked)] == [
        ("verification", "recorded")]
    assert len(unchecked["model_saw"]) == 2  # the first claim ended the run: the change, then the claim


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_budget_guard_stops_the_framework_run_at_the_budget(framework):
    recorded = drive(framework, "budget", "enforce")
    (event,) = interventions(recorded)
    assert (event["mast.guard.name"], event["mast.guard.action"], event["mast.failure_mode"]) == ("budget", "stopped", "FM-1.5")
    root = next(s for s in recorded["spans"] if s["name"] == "invoke_agent sre-agent")
    assert root["attributes"]["mast.run.termination_reason"] == "max_steps"
    assert len(recorded["model_saw"]) == 3  # the budget: the fourth model call never went out
    assert recorded["outcome"] is None  # the run ended inside the framework, with no answer
