"""Agent runs and tool calls as spans: names, kinds, attributes, parenting, steps, errors, content."""

from __future__ import annotations

import asyncio
import json

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from mast_otel.instrumentation import agent_run, configure, current_run, tool, tool_call
from mast_otel.wire import attributes as A
from mast_otel.wire.hashing import stable_hash


@tool(kind="read")
def kubectl_get(resource: str, namespace: str = "default") -> dict:
    return {"kind": "List", "items": [f"{namespace}/{resource}"]}


@tool("rollout_check", kind="verify")
def check_rollout(deployment: str) -> dict:
    return {"passed": deployment == "api", "detail": "ready"}


@tool(kind="write")
def delete_pod(name: str) -> None:
    raise PermissionError(f"forbidden: {name}")


def test_single_agent_run_spans_and_hints(spans):
    with agent_run("triage", max_steps=8, ambiguous=False, constraints=["read_only"], role="investigator",
                   allowed_tools=["kubectl_get"], conversation_id="conv-1") as run:
        assert current_run() is run
        kubectl_get("pods", namespace="prod")
        run.set_claimed_success(True)
        run.set_outcome("success", score=0.75)
    assert current_run() is None

    agent = spans.one("invoke_agent triage")
    tool_span = spans.one("execute_tool kubectl_get")
    assert agent.kind is SpanKind.INTERNAL and tool_span.kind is SpanKind.INTERNAL
    assert spans.parent_of(agent) is None
    assert spans.parent_of(tool_span) == agent.context.span_id
    assert tool_span.context.trace_id == agent.context.trace_id
    attrs = agent.attributes
    assert attrs[A.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert attrs[A.GEN_AI_AGENT_NAME] == "triage"
    assert attrs[A.GEN_AI_CONVERSATION_ID] == "conv-1"
    assert attrs[A.MAST_TASK_MAX_STEPS] == 8
    assert attrs[A.MAST_TASK_AMBIGUOUS] is False
    assert tuple(attrs[A.MAST_TASK_CONSTRAINTS]) == ("read_only",)
    assert attrs[A.MAST_AGENT_ROLE] == "investigator"
    assert tuple(attrs[A.MAST_AGENT_ALLOWED_TOOLS]) == ("kubectl_get",)
    assert attrs[A.MAST_RUN_CLAIMED_SUCCESS] is True
    assert attrs[A.MAST_RUN_OUTCOME] == "success" and attrs[A.MAST_RUN_SCORE] == 0.75
    assert A.MAST_RUN_TERMINATION_REASON not in attrs  # nothing said how it ended
    t = tool_span.attributes
    assert t[A.GEN_AI_OPERATION_NAME] == "execute_tool"
    assert t[A.GEN_AI_TOOL_NAME] == "kubectl_get"
    assert t[A.MAST_TOOL_KIND] == "read"
    assert t[A.MAST_STEP_INDEX] == 0
    assert t[A.GEN_AI_CONVERSATION_ID] == "conv-1"
    assert t[A.MAST_TOOL_ARGS_HASH] == stable_hash({"resource": "pods", "namespace": "prod"})
    assert t[A.MAST_TOOL_RESULT_HASH] == stable_hash({"kind": "List", "items": ["prod/pods"]})
    assert agent.status.status_code is StatusCode.UNSET


def test_content_is_off_by_default_and_hashes_stay(spans, monkeypatch):
    monkeypatch.delenv(A.CAPTURE_CONTENT_ENV, raising=False)
    configure(capture_content=None)
    with agent_run("triage", task="why is checkout failing?") as run:
        with tool_call("search_logs", kind="read", arguments={"query": "secret-token"}) as call:
            call.set_result("line with password=hunter2")
        run.set_final_answer("the database password expired")
    every_value = json.dumps([dict(s.attributes) for s in spans.all], default=str)
    for secret in ("checkout", "secret-token", "hunter2", "password expired"):
        assert secret not in every_value
    tool_span = spans.one("execute_tool search_logs")
    assert tool_span.attributes[A.MAST_TOOL_ARGS_HASH] == stable_hash({"query": "secret-token"})
    assert tool_span.attributes[A.MAST_TOOL_RESULT_HASH] == stable_hash("line with password=hunter2")
    assert spans.one("invoke_agent triage").attributes[A.MAST_RUN_TERMINATION_REASON] == "final_answer"


def test_content_switched_on_by_environment(spans, monkeypatch):
    monkeypatch.setenv(A.CAPTURE_CONTENT_ENV, "true")
    configure(capture_content=None)
    with agent_run("triage", task="why is checkout failing?") as run:
        with tool_call("search_logs", kind="read", arguments={"query": "timeout"}) as call:
            call.set_result(["ERROR timeout"])
        run.set_final_answer("db timeouts")
    agent = spans.one("invoke_agent triage")
    task = json.loads(agent.attributes[A.GEN_AI_INPUT_MESSAGES])
    assert task == [{"role": "user", "parts": [{"type": "text", "content": "why is checkout failing?"}]}]
    assert agent.attributes[A.MAST_RUN_FINAL_ANSWER] == "db timeouts"
    tool_span = spans.one("execute_tool search_logs")
    assert json.loads(tool_span.attributes[A.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"query": "timeout"}
    assert json.loads(tool_span.attributes[A.GEN_AI_TOOL_CALL_RESULT]) == ["ERROR timeout"]


def test_content_is_capped_with_a_marker(capture):
    configure(max_content_chars=100)
    try:
        with tool_call("cat", arguments="x" * 1000) as call:
            call.set_result("y" * 5000)
    finally:
        configure(max_content_chars=8192)
    result = capture.one("execute_tool cat").attributes[A.GEN_AI_TOOL_CALL_RESULT]
    assert len(result) <= 100
    assert result.startswith("yyy") and result.endswith("[truncated 4925 chars]")


def test_capped_messages_stay_valid_json(capture):
    configure(max_content_chars=300)
    try:
        with agent_run("triage", task="why? " * 1000):
            pass
    finally:
        configure(max_content_chars=8192)
    raw = capture.one("invoke_agent triage").attributes[A.GEN_AI_INPUT_MESSAGES]
    text = json.loads(raw)[0]["parts"][0]["content"]
    assert len(text) <= 300 and text.startswith("why? why?") and text.endswith("[truncated 4725 chars]")


def test_tool_error_is_recorded_and_reraised_unchanged(spans):
    with pytest.raises(PermissionError, match="forbidden: api-1") as raised:
        with agent_run("remediate") as run:
            run.next_step()
            delete_pod("api-1")
    tool_span = spans.one("execute_tool delete_pod")
    assert type(raised.value) is PermissionError
    assert tool_span.status.status_code is StatusCode.ERROR
    assert tool_span.attributes[A.ERROR_TYPE] == "PermissionError"
    assert [e.name for e in tool_span.events] == ["exception"]
    assert A.MAST_TOOL_RESULT_HASH not in tool_span.attributes
    agent = spans.one("invoke_agent remediate")
    assert agent.status.status_code is StatusCode.ERROR
    assert agent.attributes[A.MAST_RUN_TERMINATION_REASON] == "error"


def test_verify_tool_result_from_return_value_and_explicit(spans):
    with agent_run("deployer"):
        assert check_rollout("api")["passed"] is True
        check_rollout("web")
        with tool_call("smoke_test", kind="verify") as call:
            call.set_verification(False)
    verdicts = [s.attributes[A.MAST_TOOL_VERIFICATION_PASSED] for s in spans.named("execute_tool rollout_check")]
    assert verdicts == [True, False]
    assert spans.one("execute_tool smoke_test").attributes[A.MAST_TOOL_VERIFICATION_PASSED] is False


def test_step_index_follows_explicit_iterations(spans):
    with agent_run("loop") as run:
        assert run.next_step() == 0  # nothing happened yet: the first iteration is reused
        kubectl_get("pods")
        assert run.next_step() == 1
        kubectl_get("nodes")
        kubectl_get("events")
        assert run.step == 1
    steps = [s.attributes[A.MAST_STEP_INDEX] for s in spans.named("execute_tool kubectl_get")]
    assert steps == [0, 1, 1]


def test_nested_runs_keep_their_own_steps_and_share_the_conversation(spans):
    with agent_run("supervisor", conversation_id="chat-7") as outer:
        kubectl_get("pods")
        outer.next_step()
        with tool_call("handoff_to_db_expert", kind="handoff"):
            with agent_run("db_expert", role="database") as inner:
                assert current_run() is inner
                kubectl_get("statefulsets")
                inner.next_step()
                kubectl_get("pvc")
                inner.set_termination_reason("final_answer")
        assert current_run() is outer
        kubectl_get("deployments")
    sup = spans.one("invoke_agent supervisor")
    expert = spans.one("invoke_agent db_expert")
    handoff = spans.one("execute_tool handoff_to_db_expert")
    assert spans.parent_of(handoff) == sup.context.span_id
    assert spans.parent_of(expert) == handoff.context.span_id
    assert sup.attributes[A.GEN_AI_CONVERSATION_ID] == expert.attributes[A.GEN_AI_CONVERSATION_ID] == "chat-7"
    by_parent = {}
    for s in spans.named("execute_tool kubectl_get"):
        by_parent.setdefault(spans.parent_of(s), []).append(s.attributes[A.MAST_STEP_INDEX])
    assert by_parent == {sup.context.span_id: [0, 1], expert.context.span_id: [0, 1]}
    assert handoff.attributes[A.MAST_STEP_INDEX] == 1


def test_a_run_carries_a_conversation_id_only_when_the_application_gives_one(spans):
    """An id invented per run would make every run a stored one-turn session."""
    with agent_run("triage"):
        kubectl_get("pods")
    with agent_run("supervisor"):
        with agent_run("db_expert"):
            kubectl_get("pvc")
    with agent_run("triage", conversation_id="ticket-42"):
        kubectl_get("pods")
    carrying = [s for s in spans.all if A.GEN_AI_CONVERSATION_ID in (s.attributes or {})]
    assert {s.attributes[A.GEN_AI_CONVERSATION_ID] for s in carrying} == {"ticket-42"}
    assert {s.name for s in carrying} == {"invoke_agent triage", "execute_tool kubectl_get"}


async def test_async_runs_and_tools_across_tasks(spans):
    @tool(kind="read")
    async def fetch_metrics(service: str) -> list[float]:
        await asyncio.sleep(0)
        return [0.5]

    @agent_run("async_triage", max_steps=3)
    async def triage(service: str) -> str:
        run = current_run()
        await asyncio.gather(fetch_metrics(service), asyncio.create_task(fetch_metrics("db")))
        run.next_step()
        async with tool_call("summarize", arguments={"service": service}):
            await asyncio.sleep(0)
        return f"{service} is fine"

    answers = await asyncio.gather(triage("api"), triage("web"))
    assert answers == ["api is fine", "web is fine"]
    runs = spans.named("invoke_agent async_triage")
    assert len(runs) == 2 and len({r.context.trace_id for r in runs}) == 2
    for run in runs:
        assert run.attributes[A.MAST_RUN_TERMINATION_REASON] == "final_answer"
        children = [s for s in spans.all if spans.parent_of(s) == run.context.span_id]
        assert sorted((s.name, s.attributes[A.MAST_STEP_INDEX]) for s in children) == [
            ("execute_tool fetch_metrics", 0), ("execute_tool fetch_metrics", 0), ("execute_tool summarize", 1)]


async def test_async_run_cancelled_and_timed_out(spans):
    async def hang():
        async with agent_run("slow"):
            await asyncio.sleep(10)

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(hang(), 0.01)
    task = asyncio.create_task(hang())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    reasons = [s.attributes[A.MAST_RUN_TERMINATION_REASON] for s in spans.named("invoke_agent slow")]
    assert reasons == ["cancelled", "cancelled"]  # wait_for cancels the inner task too


def test_timeout_inside_run_is_a_timeout(spans):
    with pytest.raises(TimeoutError):
        with agent_run("bounded"):
            raise TimeoutError("budget exhausted")
    assert spans.one("invoke_agent bounded").attributes[A.MAST_RUN_TERMINATION_REASON] == "timeout"


def test_decorated_method_tool_hashes_arguments_by_name(spans):
    class Cluster:
        @tool(kind="read")
        def describe(self, kind: str, *names: str, verbose: bool = False) -> str:
            return kind

    Cluster().describe("pod", "a", "b", verbose=True)
    Cluster().describe(kind="pod")
    first, second = spans.named("execute_tool describe")
    assert first.attributes[A.MAST_TOOL_ARGS_HASH] == stable_hash({"kind": "pod", "names": ["a", "b"], "verbose": True})
    assert second.attributes[A.MAST_TOOL_ARGS_HASH] == stable_hash({"kind": "pod"})
    assert A.MAST_STEP_INDEX not in first.attributes  # outside any run


def test_invalid_values_are_rejected_with_clear_errors(spans):
    with pytest.raises(ValueError, match="tool kind must be one of read, write"):
        tool_call("x", kind="delete")
    with pytest.raises(ValueError, match="tool kind"):
        tool(kind="mutate")
    with pytest.raises(ValueError, match="max_steps"):
        agent_run("x", max_steps=-1)
    with pytest.raises(TypeError, match="constraints"):
        agent_run("x", constraints="read_only")
    with agent_run("x") as run:
        with pytest.raises(ValueError, match="termination reason must be one of final_answer"):
            run.set_termination_reason("done")
        with pytest.raises(ValueError, match="outcome must be one of success, failure, unknown"):
            run.set_outcome("ok")
        with pytest.raises(ValueError, match="finite"):
            run.set_outcome("failure", score=float("nan"))
    attrs = spans.one("invoke_agent x").attributes
    assert A.MAST_RUN_TERMINATION_REASON not in attrs and A.MAST_RUN_OUTCOME not in attrs


def test_instrumentation_failures_never_break_the_agent(spans, caplog):
    class BrokenTracer:
        def start_span(self, *args, **kwargs):
            raise RuntimeError("exporter misconfigured")

    from mast_otel.instrumentation import settings

    settings.SETTINGS._tracer = BrokenTracer()
    try:
        with agent_run("resilient") as run:
            assert kubectl_get("pods") == {"kind": "List", "items": ["default/pods"]}
            run.set_final_answer("ok")
        with pytest.raises(KeyError):
            with tool_call("lookup"):
                raise KeyError("agent's own error")
    finally:
        configure()  # drops the broken tracer
    assert spans.all == []
    logged = [r.getMessage() for r in caplog.records if r.name == "mast_otel.instrumentation"]
    assert any("starting an agent run span" in m for m in logged)
    assert sum("starting a tool call span" in m for m in logged) == 1  # logged once, not per call


def test_reentering_a_live_run_is_an_error(spans):
    run = agent_run("once")
    with run:
        with pytest.raises(RuntimeError, match="already active"):
            run.__enter__()
    assert len(spans.named("invoke_agent once")) == 1


def test_spans_join_the_applications_current_trace(spans):
    app_tracer = spans.provider.get_tracer("app")
    with app_tracer.start_as_current_span("http request") as request_span:
        with agent_run("triage"):
            pass
    agent = spans.one("invoke_agent triage")
    assert spans.parent_of(agent) == request_span.get_span_context().span_id
    assert trace.get_current_span() is trace.INVALID_SPAN


def test_an_answer_saying_the_task_was_not_done_claims_no_success(spans, monkeypatch):
    """The answer's text is read in process, so this holds with content capture off."""
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    with agent_run("gives-up") as run:
        run.set_final_answer("NOT RESOLVED: the pods still crash-loop")
    with agent_run("claims") as run:
        run.set_final_answer("Resolved: restarted checkout")
    with agent_run("overrides") as run:
        run.set_claimed_success(True)
        run.set_final_answer("I could not verify it, but it should be fine")
    gives_up, claims, overrides = (spans.one(f"invoke_agent {n}").attributes for n in ("gives-up", "claims", "overrides"))
    assert gives_up[A.MAST_RUN_CLAIMED_SUCCESS] is False and A.MAST_RUN_FINAL_ANSWER not in gives_up
    assert gives_up[A.MAST_RUN_TERMINATION_REASON] == "final_answer"
    assert A.MAST_RUN_CLAIMED_SUCCESS not in claims  # ending with an answer stays the claim it was
    assert overrides[A.MAST_RUN_CLAIMED_SUCCESS] is True
