"""The simulated models reproduce their failure signatures on average, as the real detectors
see them in the spans (ranges, not exact values: the runs are varied on purpose)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from mast_otel.processors import registry
from mast_otel.processors.demo.policies import PROFILES, SimulatedModel, parse_text_action, read_belief

RUNS = 40


@pytest.fixture(scope="module")
def fleet(diagnose_fleet):
    return {model: diagnose_fleet(model, RUNS) for model in PROFILES}


def success_rate(runs):
    return sum(r.outcome == "success" for r in runs) / len(runs)


def modes_per_failed_run(runs):
    failed = [r for r in runs if r.outcome == "failure"]
    return sum(len(r.modes) for r in failed) / len(failed)


def share_with(runs, *modes):
    return sum(bool(r.modes & set(modes)) for r in runs) / len(runs)


def test_success_ranks_frontier_then_termination_prone_then_open(fleet):
    rates = {m: success_rate(runs) for m, runs in fleet.items()}
    assert rates["sim-frontier"] >= 0.6, rates
    assert 0.3 <= rates["sim-flash"] <= 0.8, rates
    assert rates["sim-open"] <= 0.4, rates
    assert rates["sim-frontier"] > rates["sim-flash"] > rates["sim-open"], rates


def test_frontier_fails_in_isolated_ways_mostly_verification(fleet):
    runs = fleet["sim-frontier"]
    assert 1.3 <= modes_per_failed_run(runs) <= 3.5
    failed_modes = Counter(m for r in runs if r.outcome == "failure" for m in r.modes)
    fc3 = sum(n for m, n in failed_modes.items() if registry.get(m).category == "FC3")
    assert fc3 / sum(failed_modes.values()) >= 0.4, failed_modes
    assert share_with(runs, "FM-1.4", "FM-2.6") == 0  # never loses history nor says one thing and does another


def test_termination_prone_model_stops_wrongly(fleet):
    failed = [r for r in fleet["sim-flash"] if r.outcome == "failure"]
    assert share_with(failed, "FM-3.1", "FM-1.5") >= 0.6


def test_open_model_failures_cascade(fleet):
    runs = fleet["sim-open"]
    assert modes_per_failed_run(runs) >= 3.5
    assert modes_per_failed_run(runs) >= modes_per_failed_run(fleet["sim-frontier"]) + 1
    assert share_with(runs, "FM-1.4") >= 0.7  # its small context drops history
    assert share_with(runs, "FM-2.6") >= 0.5  # announces one tool, runs another
    assert share_with(runs, "FM-1.3") >= 0.4  # re-reads what it forgot


def test_policy_knows_only_what_the_messages_say():
    logs = {"deployment": "checkout", "lines": ["ImportError: cannot import name"]}
    messages = [
        {"role": "user", "content": "Incident: checkout pods are crash-looping. Deployment: checkout."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_logs", "arguments": '{"deployment": "checkout"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "get_logs", "content": json.dumps(logs)},
    ]
    assert read_belief(messages).cause == "bad image"
    forgotten = read_belief(messages[1:])  # the task scrolled out of the context
    assert forgotten.target is None and forgotten.cause is None


def test_careful_policy_asks_before_acting_on_an_ambiguous_alert():
    import random

    model = SimulatedModel(PROFILES["sim-frontier"], random.Random(0))
    model.temper.skip_clarify = False
    decision = model.decide([{"role": "user", "content": "Incident: customers report errors in the shop."}],
                            role="sre", allowed=("ask_user", "get_pods"))
    assert decision.tool_calls[0][0] == "ask_user"


def test_text_action_parsing():
    assert parse_text_action('Thinking.\nAction: get_logs {"deployment": "search"}') == ("get_logs", {"deployment": "search"})
    assert parse_text_action("Action: get_pods") == ("get_pods", {})
    assert parse_text_action("no action here") is None
