"""The simulated models reproduce their failure signatures on average, as the real detectors
see them in the spans (ranges, not exact values: the runs are varied on purpose)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from mast_otel.processors import taxonomy
from mast_otel.demo.policies import (
    FINAL_NOT_OK, FINAL_OK, OUT_OF_STEPS, PROFILES, SimulatedModel, parse_text_action, read_belief,
)

RUNS = 20
SEEDS = (7, 11, 13)  # a fixed seed set: the figures are averages over varied runs, never one run's labels
VERIFICATION = {"FM-3.2", "FM-3.3"}
TERMINATION = {"FM-1.5", "FM-3.1"}


@pytest.fixture(scope="module")
def fleet(diagnose_fleet):
    return {model: [r for seed in SEEDS for r in diagnose_fleet(model, RUNS, seed)] for model in PROFILES}


def success_rate(runs):
    return sum(r.outcome == "success" for r in runs) / len(runs)


def failed(runs):
    return [r for r in runs if r.outcome == "failure"]


def modes_per_failed_run(runs):
    return sum(len(r.modes) for r in failed(runs)) / len(failed(runs))


def share_with(runs, *modes):
    return sum(bool(r.modes & set(modes)) for r in runs) / len(runs)


def top_failed_modes(runs, n=2):
    counts = Counter(m for r in failed(runs) for m in r.modes)
    return {m for m, _ in counts.most_common(n)}


def test_success_ranks_frontier_then_termination_prone_then_open(fleet):
    rates = {m: success_rate(runs) for m, runs in fleet.items()}
    assert rates["sim-frontier"] >= 0.55, rates
    assert 0.25 <= rates["sim-flash"] <= 0.65, rates
    assert rates["sim-open"] <= 0.3, rates
    assert rates["sim-frontier"] > rates["sim-flash"] > rates["sim-open"], rates


def test_frontier_fails_in_isolated_ways_mostly_verification(fleet):
    runs = fleet["sim-frontier"]
    assert 1.8 <= modes_per_failed_run(runs) <= 3.2
    assert top_failed_modes(runs) == VERIFICATION
    assert share_with(failed(runs), *VERIFICATION) >= 0.8
    assert share_with(runs, "FM-1.4", "FM-2.6") == 0  # never loses history nor says one thing and does another
    assert sum(taxonomy.is_fatal(r.modes) for r in runs) / len(runs) <= 0.3  # its slips are mostly recoverable


def test_termination_prone_model_stops_wrongly_and_its_failures_cascade(fleet):
    runs = fleet["sim-flash"]
    broken = failed(runs)
    counts = Counter(m for r in broken for m in r.modes)
    # Led by termination: cut off at the budget most often, and nearly every failure ends wrongly one way or the other.
    assert counts["FM-1.5"] == max(counts.values()), counts
    assert share_with(broken, *TERMINATION) >= 0.9
    assert share_with(broken, "FM-1.5") >= 0.5 and share_with(broken, "FM-3.1") >= 0.15
    # ... but not alone (published reference: 4.7 modes per failed run): it loops on the same reads, outgrows
    # the context the agent keeps, says one tool and runs another, and claims success it never checked.
    assert 4.0 <= modes_per_failed_run(runs) <= 5.5
    assert modes_per_failed_run(runs) >= modes_per_failed_run(fleet["sim-frontier"]) + 1.5
    for mode in ("FM-1.3", "FM-1.4", "FM-2.6"):
        assert share_with(broken, mode) >= 0.5, mode
    assert share_with(broken, *VERIFICATION) >= 0.5
    # Working on after the fix was verified: runs that succeed, yet overran.
    assert any("FM-1.5" in r.modes for r in runs if r.outcome == "success")


def test_open_model_failures_cascade(fleet):
    runs = fleet["sim-open"]
    assert modes_per_failed_run(runs) >= 4.6
    assert modes_per_failed_run(runs) >= modes_per_failed_run(fleet["sim-frontier"]) + 2
    broken = failed(runs)
    for mode in ("FM-1.4", "FM-2.6", "FM-1.3"):  # trimmed history, says one thing and does another, redoes work
        assert share_with(broken, mode) >= 0.8, mode
    assert share_with(broken, *TERMINATION) >= 0.8
    assert share_with(broken, *VERIFICATION) >= 0.6


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


def _trimmed_messages(steps: int = 1) -> list[dict]:
    """What a model sees once the agent has trimmed its history: tool exchanges, no task."""
    pods = {"pods": [{"deployment": "search", "node": "node-3", "reason": "OOMKilled"}]}
    messages = []
    for i in range(steps):
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "get_pods", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "name": "get_pods", "content": json.dumps(pods)},
        ]
    return messages


def test_pressure_makes_a_termination_prone_model_say_one_tool_and_run_another():
    import dataclasses
    import random

    profile = dataclasses.replace(PROFILES["sim-flash"], pressure_mismatch=1.0)
    model = SimulatedModel(profile, random.Random(0))
    model.temper.rash = False
    calm = [{"role": "user", "content": "Incident: search restarts. Deployment: search."}, *_trimmed_messages()]
    lost = _trimmed_messages()  # the task scrolled out of view
    assert not read_belief(calm).under_pressure and read_belief(lost).under_pressure
    for messages, mismatched in ((calm, False), (lost, True)):
        decision = model.decide(messages, role="sre", allowed=("get_pods", "get_logs"))
        said, acted = decision.tool_calls[0][0], parse_text_action(decision.content)[0]
        assert (said != acted) is mismatched, decision


def test_fixated_model_comes_back_to_the_same_read_instead_of_widening_the_search():
    import random

    model = SimulatedModel(PROFILES["sim-flash"], random.Random(0))
    belief = read_belief(_trimmed_messages(steps=2))
    model.temper.fixate = True
    assert model._look_around(belief) == ("get_pods", {})
    model.temper.fixate = False
    assert model._look_around(belief) != ("get_pods", {})


def test_text_action_parsing():
    assert parse_text_action('Thinking.\nAction: get_logs {"deployment": "search"}') == ("get_logs", {"deployment": "search"})
    assert parse_text_action("Action: get_pods") == ("get_pods", {})
    assert parse_text_action("no action here") is None


def test_at_the_budget_an_honest_model_reports_failure_and_a_bluffing_one_claims_success():
    import random

    messages = [
        {"role": "user", "content": "Incident: checkout is down. Deployment: checkout."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "restart_deployment",
                                                          "arguments": '{"deployment": "checkout"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "restart_deployment", "content": '{"restarted": true}'},
        {"role": "user", "content": f"{OUT_OF_STEPS} (12): no more tools. Give your final answer now."},
    ]
    model = SimulatedModel(PROFILES["sim-open"], random.Random(0))
    model.temper.bluff = False
    honest = model.decide(messages, role="sre", allowed=())
    model.temper.bluff = True
    bluff = model.decide(messages, role="sre", allowed=())
    assert not honest.tool_calls and honest.content.startswith(FINAL_NOT_OK)
    assert not bluff.tool_calls and bluff.content.startswith(FINAL_OK + ":")


def test_compaction_keeps_only_the_latest_exchange():
    from mast_otel.demo.agent import _compact

    history = [{"role": "user", "content": "Incident: ..."}]
    for i in range(3):
        history += [{"role": "assistant", "content": f"step {i}"}, {"role": "tool", "content": "{}"}]
    history.append({"role": "user", "content": OUT_OF_STEPS})
    kept = _compact(history)
    assert [m["content"] for m in kept] == ["step 2", "{}", OUT_OF_STEPS]
    assert read_belief(kept).target is None  # the task is gone with the rest
