"""Runtime guards with real spans: each guard in observe and enforce mode, and the near misses it leaves alone."""

from __future__ import annotations

import pytest

from mast_otel.instrumentation import agent_run, tool, tool_call
from mast_otel.wire import attributes as A
from mast_otel.instrumentation.guards import (
    BudgetGuardConfig, ClarifyGuardConfig, GuardConfig, GuardRefusal, LoopGuardConfig, RunGuard,
    VerificationGuardConfig,
)

ENFORCE, OBSERVE = GuardConfig.all("enforce"), GuardConfig.all("observe")


def events(span) -> list[dict]:
    return [dict(e.attributes) for e in span.events if e.name == A.EVENT_GUARD_INTERVENTION]


def all_events(spans) -> list[dict]:
    return [e for s in spans.all for e in events(s)]


def hex_id(span) -> str:
    return format(span.context.span_id, "016x")


def call(name: str, kind: str, args: dict, result: object = None, passed: bool | None = None) -> None:
    with tool_call(name, kind=kind, arguments=args) as c:
        c.set_result(result if result is not None else {"ok": True})
        if passed is not None:
            c.set_verification(passed)


# --- loop -------------------------------------------------------------------------------------
def test_loop_guard_enforce_blocks_the_repeat_and_says_why(spans):
    refusals = []
    with agent_run("sre", guards=ENFORCE):
        for _ in range(5):
            try:
                call("get_pods", "read", {"ns": "prod"}, {"phase": "CrashLoopBackOff"})
            except GuardRefusal as refused:
                refusals.append(refused.refusal())
    assert len(refusals) == 2
    assert refusals[0]["refused_by"] == "mast.guard.loop" and refusals[0]["failure_mode"] == "FM-1.3"
    tools = spans.named("execute_tool get_pods")
    assert len(tools) == 5
    ran, blocked = tools[:3], tools[3:]
    assert all(not events(s) for s in ran)
    for span in blocked:
        (event,) = events(span)
        assert event[A.MAST_GUARD_NAME] == "loop" and event[A.MAST_GUARD_MODE] == "enforce"
        assert event[A.MAST_GUARD_ACTION] == "blocked" and event[A.MAST_FAILURE_MODE] == "FM-1.3"
        assert list(event[A.MAST_EVIDENCE_SPAN_IDS]) == [hex_id(s) for s in ran]
        assert "3 times" in event[A.GEN_AI_GUARDRAIL_VERDICT_REASON]
        assert A.MAST_TOOL_RESULT_HASH not in span.attributes  # the tool never ran


def test_loop_guard_observe_records_and_lets_the_call_run(spans):
    with agent_run("sre", guards=OBSERVE):
        for _ in range(4):
            call("get_pods", "read", {"ns": "prod"}, {"phase": "CrashLoopBackOff"})
    tools = spans.named("execute_tool get_pods")
    assert all(A.MAST_TOOL_RESULT_HASH in s.attributes for s in tools)
    assert [e[A.MAST_GUARD_ACTION] for e in events(tools[3])] == ["recorded"]
    assert events(tools[3])[0][A.MAST_GUARD_MODE] == "observe"


@pytest.mark.parametrize("config", [ENFORCE, OBSERVE])
def test_loop_guard_leaves_a_poll_whose_result_changes_alone(spans, config):
    with agent_run("sre", guards=config):
        for i in range(8):
            call("rollout_status", "read", {"deploy": "api"}, {"ready": i})
    assert all_events(spans) == []
    assert len(spans.named("execute_tool rollout_status")) == 8


def test_loop_guard_can_stop_the_run_instead(spans):
    config = GuardConfig(loop=LoopGuardConfig(mode="enforce", on_loop="stop"))
    reached = []
    with agent_run("sre", guards=config):
        for i in range(5):
            call("get_pods", "read", {"ns": "prod"}, {"phase": "Pending"})
            reached.append(i)
    assert reached == [0, 1, 2]
    root = spans.one("invoke_agent sre")
    assert root.attributes[A.MAST_RUN_TERMINATION_REASON] == "cancelled"
    assert root.status.is_ok


# --- budget and the "done" state ----------------------------------------------------------------
def test_budget_guard_enforce_stops_at_the_budget_with_the_reason(spans):
    steps = []
    with agent_run("sre", max_steps=2, guards=ENFORCE) as run:
        for i in range(6):
            run.next_step()
            call("get_logs", "read", {"page": i})
            steps.append(i)
    assert steps == [0, 1]
    root = spans.one("invoke_agent sre")
    assert root.attributes[A.MAST_RUN_TERMINATION_REASON] == "max_steps"
    stopped = spans.named("execute_tool get_logs")[-1]
    (event,) = events(stopped)
    assert event[A.MAST_GUARD_NAME] == "budget" and event[A.MAST_GUARD_ACTION] == "stopped"
    assert event[A.MAST_FAILURE_MODE] == "FM-1.5"


def test_budget_guard_observe_records_once_and_changes_nothing(spans):
    with agent_run("sre", max_steps=2, guards=OBSERVE) as run:
        for i in range(5):
            run.next_step()
            call("get_logs", "read", {"page": i})
    assert len(spans.named("execute_tool get_logs")) == 5
    assert [(e[A.MAST_GUARD_NAME], e[A.MAST_GUARD_ACTION]) for e in all_events(spans)] == [("budget", "recorded")]
    assert A.MAST_RUN_TERMINATION_REASON not in spans.one("invoke_agent sre").attributes


def test_done_state_ends_the_run_as_resolved_once_its_check_passed(spans):
    with agent_run("sre", max_steps=20, guards=ENFORCE) as run:
        call("restart", "write", {"pod": "api"})
        call("check_health", "verify", {"svc": "api"}, {"healthy": True}, passed=True)
        assert run.guard.done
        call("check_health", "verify", {"svc": "api"}, {"healthy": True}, passed=True)  # re-checking is fine
        call("scale", "write", {"replicas": 5})  # more work after success: the guard ends the run
        raise AssertionError("not reached")
    root = spans.one("invoke_agent sre")
    assert root.attributes[A.MAST_RUN_TERMINATION_REASON] == "final_answer"
    assert root.attributes[A.MAST_RUN_CLAIMED_SUCCESS] is True
    (event,) = all_events(spans)
    assert event[A.MAST_GUARD_NAME] == "budget" and event[A.MAST_GUARD_ACTION] == "stopped"
    assert list(event[A.MAST_EVIDENCE_SPAN_IDS]) == [hex_id(spans.named("execute_tool check_health")[-1])]


def test_done_state_observe_records_and_the_run_goes_on(spans):
    with agent_run("sre", guards=OBSERVE):
        call("restart", "write", {"pod": "api"})
        call("check_health", "verify", {"svc": "api"}, passed=True)
        call("scale", "write", {"replicas": 5})
        call("scale", "write", {"replicas": 6})
    assert len(spans.named("execute_tool scale")) == 2
    assert [e[A.MAST_GUARD_ACTION] for e in all_events(spans)] == ["recorded"]


def test_a_failed_check_is_not_done(spans):
    with agent_run("sre", guards=ENFORCE) as run:
        call("restart", "write", {"pod": "api"})
        call("check_health", "verify", {"svc": "api"}, passed=False)
        assert not run.guard.done
        call("rollback", "write", {"deploy": "api"})
    assert all_events(spans) == []


# --- verification gate --------------------------------------------------------------------------
def test_verification_gate_enforce_refuses_an_unchecked_success_claim(spans):
    with agent_run("sre", guards=ENFORCE) as run:
        call("restart", "write", {"pod": "api"})
        refusal = run.finish("Fixed: restarted the api pod.")
        assert refusal is not None and refusal["failure_mode"] == "FM-3.2"
        assert refusal["action"] == "refused_finish" and "never checked" in refusal["reason"]
        call("check_health", "verify", {"svc": "api"}, passed=True)
        assert run.finish("Fixed: restarted the api pod.") is None
    root = spans.one("invoke_agent sre")
    (event,) = events(root)
    assert event[A.MAST_GUARD_NAME] == "verification" and event[A.MAST_GUARD_ACTION] == "refused_finish"
    assert hex_id(spans.one("execute_tool restart")) in event[A.MAST_EVIDENCE_SPAN_IDS]
    assert root.attributes[A.MAST_RUN_TERMINATION_REASON] == "final_answer"


def test_verification_gate_refuses_a_claim_after_a_failed_check(spans):
    with agent_run("sre", guards=ENFORCE) as run:
        call("restart", "write", {"pod": "api"})
        call("check_health", "verify", {"svc": "api"}, passed=False)
        refusal = run.finish("All good.", claimed_success=True)
    assert refusal is not None and refusal["failure_mode"] == "FM-3.3"


def test_verification_gate_observe_records_and_lets_the_run_finish(spans):
    with agent_run("sre", guards=OBSERVE) as run:
        call("restart", "write", {"pod": "api"})
        assert run.finish("Fixed.") is None
    root = spans.one("invoke_agent sre")
    assert [e[A.MAST_GUARD_ACTION] for e in events(root)] == ["recorded"]
    assert root.attributes[A.MAST_RUN_TERMINATION_REASON] == "final_answer"


@pytest.mark.parametrize("config", [ENFORCE, OBSERVE])
def test_verification_gate_leaves_a_checked_change_and_an_honest_failure_alone(spans, config):
    with agent_run("sre", guards=config) as run:
        call("restart", "write", {"pod": "api"})
        call("check_health", "verify", {"svc": "api"}, passed=True)
        assert run.finish("Fixed: the api pod is healthy again.") is None
    with agent_run("sre2", guards=config) as run:
        call("restart", "write", {"pod": "api"})
        assert run.finish("NOT RESOLVED: the pod still crashes.") is None
    assert all_events(spans) == []


# --- clarify or read-only -----------------------------------------------------------------------
def test_clarify_guard_enforce_refuses_changes_on_an_ambiguous_run(spans):
    with agent_run("sre", ambiguous=True, guards=ENFORCE):
        call("get_pods", "read", {"ns": "prod"})  # reading is fine
        with pytest.raises(GuardRefusal) as refused:
            call("delete_pod", "write", {"pod": "api-1"})
    assert refused.value.refusal()["failure_mode"] == "FM-2.2"
    (event,) = events(spans.one("execute_tool delete_pod"))
    assert event[A.MAST_GUARD_NAME] == "clarify_or_read_only" and event[A.MAST_GUARD_ACTION] == "blocked"
    assert A.MAST_TOOL_RESULT_HASH not in spans.one("execute_tool delete_pod").attributes


def test_clarify_guard_observe_records_and_lets_the_change_run(spans):
    with agent_run("sre", ambiguous=True, guards=OBSERVE):
        call("delete_pod", "write", {"pod": "api-1"})
    span = spans.one("execute_tool delete_pod")
    assert A.MAST_TOOL_RESULT_HASH in span.attributes
    assert [e[A.MAST_GUARD_ACTION] for e in events(span)] == ["recorded"]


@pytest.mark.parametrize("config", [ENFORCE, OBSERVE])
def test_clarify_guard_leaves_a_run_that_asked_first_alone(spans, config):
    with agent_run("sre", ambiguous=True, guards=config):
        call("ask_user", "clarify", {"question": "which cluster?"})
        call("delete_pod", "write", {"pod": "api-1"})
    with agent_run("sre2", guards=config):  # not ambiguous: nothing to clarify
        call("delete_pod", "write", {"pod": "api-2"})
    assert all_events(spans) == []


# --- decorator, plain API, defaults -------------------------------------------------------------
def test_decorated_tools_raise_the_refusal_for_the_agent_to_return(spans):
    @tool(kind="read")
    def get_pods(ns: str) -> dict:
        return {"phase": "Pending"}

    answers = []
    with agent_run("sre", guards=ENFORCE):
        for _ in range(4):
            try:
                answers.append(get_pods("prod"))
            except GuardRefusal as refused:
                answers.append(refused.message())
    assert answers[:3] == [{"phase": "Pending"}] * 3
    assert '"refused_by": "mast.guard.loop"' in answers[3]


def test_guards_default_to_observe_and_runs_without_guards_have_none(spans):
    assert GuardConfig().loop.mode == "observe" and GuardConfig().verification.mode == "observe"
    with agent_run("sre") as run:
        assert run.guard is None
        for _ in range(5):
            call("get_pods", "read", {"ns": "prod"}, {"phase": "Pending"})
        assert run.finish("Fixed.") is None
    assert all_events(spans) == []


def test_the_plain_api_works_in_any_loop_without_spans():
    guard = RunGuard(GuardConfig(loop=LoopGuardConfig(mode="enforce"), budget=BudgetGuardConfig(enabled=False),
                                 verification=VerificationGuardConfig(mode="enforce"),
                                 clarify_or_read_only=ClarifyGuardConfig(enabled=False)), agent="bot")
    decisions = []
    for _ in range(4):
        decision = guard.before_tool("search", kind="read", arguments={"q": "x"})
        decisions.append(decision.action if decision else None)
        if decision is None:
            guard.after_tool("search", kind="read", arguments={"q": "x"}, result=["same"])
    assert decisions == [None, None, None, "blocked"]
    assert guard.before_finish(claimed_success=True) is None  # read-only run: nothing unchecked
    guard.before_tool("edit", kind="write", arguments={"f": 1})
    guard.after_tool("edit", kind="write", arguments={"f": 1}, result="ok")
    refused = guard.before_finish(claimed_success=True)
    assert refused is not None and refused.failure_mode == "FM-3.2"


def test_bad_guard_config_is_a_clear_error():
    with pytest.raises(ValueError, match="mode"):
        GuardConfig(loop={"mode": "block"})


def test_tool_calls_without_a_recording_span_leave_no_state_behind():
    from opentelemetry.trace import INVALID_SPAN

    guard = RunGuard(GuardConfig.all("enforce"))
    for i in range(5):
        assert guard.before_tool("get", kind="read", arguments={"i": i}, span=INVALID_SPAN) is None
        guard.after_tool("get", kind="read", arguments={"i": i}, result=i, span=INVALID_SPAN)
    assert guard._pending == {}
