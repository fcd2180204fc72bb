"""Model and tool spans carry their run's agent name and step budget, so the processor can check
the budget before the run's own span (which ends last) arrives."""

from __future__ import annotations

import time

from mast_otel.instrumentation import agent_run, tool_call
from mast_otel.wire import attributes as A
from mast_otel.instrumentation.model_calls import begin_model_call, record_model_call, take_model_call


def model_call(call_id: str) -> None:
    """A library-independent model call begun and recorded in the current run."""
    begin_model_call(call_id, "gpt-4o", {})
    record_model_call(take_model_call(call_id), end_ns=time.time_ns())


def test_steps_name_their_agent_and_carry_its_budget(spans):
    with agent_run("triage", max_steps=4):
        model_call("call-1")
        with tool_call("kubectl_get", kind="read", arguments={"pod": "a"}):
            pass
    for name in ("chat gpt-4o", "execute_tool kubectl_get"):
        attrs = spans.one(name).attributes
        assert (attrs[A.GEN_AI_AGENT_NAME], attrs[A.MAST_TASK_MAX_STEPS], attrs[A.MAST_STEP_INDEX]) == ("triage", 4, 0), name


def test_nested_runs_stamp_their_own_name_and_budget_and_none_without_one(spans):
    with agent_run("lead"):
        with tool_call("plan", kind="other"):
            pass
        with agent_run("fixer", max_steps=2):
            with tool_call("restart", kind="write", arguments={"pod": "a"}):
                pass
    plan, restart = spans.one("execute_tool plan").attributes, spans.one("execute_tool restart").attributes
    assert plan[A.GEN_AI_AGENT_NAME] == "lead" and A.MAST_TASK_MAX_STEPS not in plan
    assert (restart[A.GEN_AI_AGENT_NAME], restart[A.MAST_TASK_MAX_STEPS]) == ("fixer", 2)


def test_steps_outside_any_run_carry_neither(spans):
    with tool_call("kubectl_get", kind="read"):
        pass
    attrs = spans.one("execute_tool kubectl_get").attributes
    assert A.GEN_AI_AGENT_NAME not in attrs and A.MAST_TASK_MAX_STEPS not in attrs
