"""The simulated models' policies: what they read from the conversation and the slips their
temperaments make (that the detectors find each planted slip is test_planted_slips.py)."""

from __future__ import annotations

import json

from mast_otel.demo.models import (
    FINAL_NOT_OK, FINAL_OK, OUT_OF_STEPS, PROFILES, SimulatedModel, parse_text_action, read_belief,
)


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
