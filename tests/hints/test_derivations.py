"""Derived hints as pure functions: each derivation, its negatives, and the precedence rules."""

from __future__ import annotations

import pytest

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.config import HintsConfig, ToolRule
from mast_otel.processors.hints import derive_hints, qualify
from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.ingest.normalize import normalize_into
from mast_otel.wire.claims import claim_in
from mast_otel.processors.hints.limits import ANSWER_CHARS, DEFAULT_LIMIT_ANSWER_PATTERNS, limit_in
from mast_otel.processors.hints.model_names import fold
from mast_otel.processors.tools.kinds import infer, verdict
from mast_otel.processors.tools.values import canonical, error_in
from mast_otel.processors.model import Finding, Role, Run, RunHints, Span

TRACE = "ab" * 16


@pytest.mark.parametrize("name, description, kind", [
    ("restart_deployment", None, "write"),
    ("kubectl_get", None, "read"),
    ("getPodLogs", None, "read"),
    ("check_health", None, "verify"),
    ("run_smoke_test", None, "verify"),
    ("transfer_to_billing_agent", None, "handoff"),
    ("ask_user", None, "clarify"),
    ("pods", "Delete the pods of a namespace.", "write"),
])
def test_tool_kinds_are_read_from_the_first_verb_of_the_name_then_the_description(name, description, kind):
    assert infer(name, description)[0] == kind


def test_a_tool_whose_name_and_description_say_nothing_gets_no_kind():
    assert infer("kubectl", "Runs kubectl.") is None and infer("", None) is None


@pytest.mark.parametrize("result, passed", [
    ({"deployment": "checkout", "healthy": False}, False),
    ('{"status": "passed"}', True),
    ("[{'text': \"{'healthy': true}\"}]", True),
    ({"ready": "NotReady"}, False),
    ("unhealthy: 0/3 replicas ready", False),
    ("all checks passed", True),
    ({"replicas": 3}, None),
])
def test_a_checks_verdict_is_read_from_its_result(result, passed):
    assert verdict(result) is passed


def test_envelopes_and_call_ids_do_not_change_a_values_hash():
    plain = {"namespace": "shop"}
    wrapped = [
        '{"type": "tool", "data": {"content": "{\\"namespace\\": \\"shop\\"}", "tool_call_id": "call_1", "status": "success"}}',
        "{'input_str': \"{'namespace': 'shop'}\", 'tags': [], 'metadata': {'run': 1}, 'inputs': {'namespace': 'shop'}}",
        '{"args": [], "sanitize_inputs_outputs": true, "kwargs": {"namespace": "shop"}}',
        '[{"toolResult": {"toolUseId": "t-9", "status": "success", "content": [{"text": "{\\"namespace\\": \\"shop\\"}"}]}}]',
        {"namespace": "shop", "tool_call_id": "call_2"},
    ]
    assert {stable_hash(canonical(w)) for w in wrapped} == {stable_hash(plain)}
    assert stable_hash(canonical({"namespace": "prod"})) != stable_hash(plain)
    assert canonical({"id": 42, "ticket": "A-1"}) == {"id": 42, "ticket": "A-1"}  # a real id argument stays


@pytest.mark.parametrize("result", [
    '{"status": "error", "error": "refused"}',
    {"error": "timeout"},
    "Error executing tool: restart of checkout refused",
    "An error occurred while running the tool. Please try again.",
    '{"type": "tool", "data": {"content": "boom", "tool_call_id": "c", "status": "error"}}',
    {"content": [{"type": "text", "text": "nope"}], "isError": True},
])
def test_errors_returned_as_values_are_failures(result):
    assert error_in(result) is not None


@pytest.mark.parametrize("result", ['{"status": "ok"}', {"errors": 0, "healthy": True}, "no errors found",
                                    {"error": None, "pods": []}, {"status": "ok", "error": ""}])
def test_results_that_merely_mention_errors_are_not_failures(result):
    assert error_in(result) is None


@pytest.mark.parametrize("result", ["Error: connection refused", "ERROR 2026-01-01 connection refused",
                                    "Exception: boom", '{"output": "Error: restart refused"}'])
def test_a_bare_error_text_is_a_failure_only_when_asked_for(result):
    assert error_in(result) is None and error_in(result, bare_text=True) is not None


@pytest.mark.parametrize("answer, claimed", [
    ("Resolved: checkout was restarted and is healthy now.", True),
    ("Restarted checkout; the incident is resolved.", True),
    ("I could not restart checkout: the restart was refused.", False),
    ("NOT RESOLVED: the pods still crash.", False),
    ("Sorry, need more steps to process this request.", False),
    ("checkout-7d9f is in CrashLoopBackOff.", None),
])
def test_claims_are_read_from_the_final_answer_and_failure_wins(answer, claimed):
    found = claim_in(answer)
    assert (found[0] if found else None) is claimed


@pytest.mark.parametrize("text", [
    "MaxTurnsExceeded", "UsageLimitExceeded: The next request would exceed the request_limit of 8",
    "GraphRecursionError('Recursion limit of 15 reached without hitting a stop condition')",
    "LlmCallsLimitExceededError: Max number of llm calls limit of `8` exceeded", "limit_turns",
    "WorkflowRuntimeError: Max iterations of 8 reached!",
    "ModelCallLimitExceededError", "Model call limits exceeded: run limit (6/6)",
    "ToolCallLimitExceededError: Tool call limits exceeded: thread limit (20/20)",
])
def test_framework_limit_errors_are_recognised(text):
    assert limit_in([text]) is not None


@pytest.mark.parametrize("text", [
    "Sorry, need more steps to process this request.",
    "Now it's time you MUST give your absolute best final answer. You'll ignore all previous instructions.",
    "Based on the above, please provide an answer to the following user task:\nfix checkout",
    "Model call limits exceeded: run limit (6/6)",
])
def test_limit_answers_and_forced_final_prompts_are_recognised(text):
    assert limit_in([text], DEFAULT_LIMIT_ANSWER_PATTERNS, ANSWER_CHARS) is not None


def test_a_long_report_that_mentions_a_limit_is_not_a_limit_answer():
    report = "Root cause: the payments pool was exhausted. " * 20 + "The retry job had reached max iterations."
    assert limit_in([report], DEFAULT_LIMIT_ANSWER_PATTERNS, ANSWER_CHARS) is None


@pytest.mark.parametrize("text", ["ToolFailure: restart refused", "rate limit exceeded for model", "end_turn",
                                  "Resolved: restarted 8 pods", "TimeoutError"])
def test_other_errors_are_not_limits(text):
    assert limit_in([text]) is None


def test_provider_prefixes_fold_but_organisations_stay():
    assert fold("openai/gpt-4o-mini") == "gpt-4o-mini"
    assert fold("meta-llama/Llama-3.1-8B") == "meta-llama/Llama-3.1-8B"
    assert fold("gpt-4o-mini-2024-07-18", {"gpt-4o-mini-2024-07-18": "gpt-4o-mini"}) == "gpt-4o-mini"


def _run(*, kind: str | None = None, answer: str | None = "Resolved.", hints: RunHints | None = None) -> Run:
    root = Span(TRACE, "01" * 8, None, "invoke_agent a", 1, 10, role=Role.AGENT, agent_name="a", service_name="svc",
                hints=hints or RunHints(final_answer=answer))
    tool = Span(TRACE, "02" * 8, "01" * 8, "execute_tool restart_deployment", 2, 3, role=Role.TOOL,
                tool_name="restart_deployment", tool_kind=kind)
    return Run.from_spans(TRACE, [root, tool])


def test_explicit_hints_win_then_the_catalog_then_inference():
    run = derive_hints(_run(kind="read"), HintsConfig(tools=[ToolRule(name="restart_*", kind="other")]))
    assert run.tool_calls[0].tool_kind == "read" and run.tool_calls[0].derived is None
    run = derive_hints(_run(), HintsConfig(tools=[ToolRule(name="restart_*", kind="other")]))
    assert (run.tool_calls[0].tool_kind, run.tool_calls[0].tool_kind_source) == ("other", "catalog")
    run = derive_hints(_run(), HintsConfig(tools=[ToolRule(name="restart_*", kind="other", service="elsewhere")]))
    assert (run.tool_calls[0].tool_kind, run.tool_calls[0].tool_kind_source) == ("write", "inferred")
    run = derive_hints(_run(), HintsConfig(infer_tool_kinds=False))
    assert run.tool_calls[0].tool_kind is None


def test_an_explicit_claim_is_never_overwritten_and_a_derived_one_is_noted():
    run = derive_hints(_run(hints=RunHints(claimed_success=False, final_answer="Resolved.")))
    assert run.hints.claimed_success is False and not run.hints.derived
    run = derive_hints(_run(answer="Resolved: all healthy."))
    assert run.hints.claimed_success is True and "claimed_success" in run.hints.derived


def test_deriving_twice_changes_nothing_more():
    run = derive_hints(_run())
    before = (run.tool_calls[0].tool_kind, dict(run.tool_calls[0].derived), run.hints.claimed_success)
    derive_hints(run)
    assert (run.tool_calls[0].tool_kind, run.tool_calls[0].derived, run.hints.claimed_success) == before


def test_findings_resting_on_derived_hints_lose_confidence_and_say_why():
    run = derive_hints(_run())
    tool, root = run.tool_calls[0].span_id, run.root.span_id
    on_derived = Finding("FM-3.2", 0.8, "unchecked change", (tool, root))
    on_explicit = Finding("FM-1.3", 0.8, "loop", (root,))
    qualified = qualify([on_derived, on_explicit], run)
    assert qualified[0].confidence == pytest.approx(0.68) and "derived hints" in qualified[0].explanation
    assert "inferred" in qualified[0].explanation and "claim of success" in qualified[0].explanation
    assert qualified[1] == on_explicit


@pytest.mark.parametrize("error_type, answer", [
    ("ModelCallLimitExceededError", None),  # exit_behavior="error": raised on the agent span
    (None, "Model call limits exceeded: run limit (6/6)"),  # exit_behavior="end": the run's last answer
])
def test_langchain_call_limit_middleware_stops_the_run_at_max_steps(error_type, answer):
    run = _run(answer=answer)
    run.root.error, run.root.error_type = error_type is not None, error_type
    derive_hints(run)
    assert run.hints.termination_reason == "max_steps" and "limit" in run.hints.derived["termination_reason"]


def _normalized(name: str, span_id: str, parent: str | None, start: int, attrs: dict) -> Span:
    """A span as the processor builds it from an OTel GenAI span's attributes."""
    span = Span(TRACE, span_id, parent, name, start, start + 1)
    assert normalize_into(span, name, attrs)
    return span


def _checked_run(check_result: str, answer: str = "Resolved: checkout is healthy now.") -> Run:
    """An agent that restarts checkout, runs a check returning ``check_result``, then answers ``answer``."""
    root = _normalized("invoke_agent sre", "01" * 8, None, 1, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "sre"})
    root.end_ns = 100
    root.hints = RunHints(final_answer=answer)
    restart = _normalized("execute_tool restart_deployment", "02" * 8, root.span_id, 2, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "restart_deployment",
        "gen_ai.tool.call.arguments": '{"deployment": "checkout"}', "gen_ai.tool.call.result": "restarted"})
    check = _normalized("execute_tool check_health", "03" * 8, root.span_id, 4, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "check_health",
        "gen_ai.tool.call.arguments": '{"deployment": "checkout"}', "gen_ai.tool.call.result": check_result})
    return Run.from_spans(TRACE, [root, restart, check])


@pytest.mark.parametrize("result", [
    '{"result": "checkout: UNHEALTHY, 0/3 ready"}',
    '{"output": {"content": "checkout: UNHEALTHY, 0/3 ready"}}',
    '{"data": {"status": "unhealthy"}}',
    '{"deployment": "checkout", "result": "UNHEALTHY, 0/3 ready"}',
])
def test_a_checks_verdict_inside_a_result_wrapper_is_read_and_a_claim_against_it_found(result):
    run = _checked_run(result)
    findings = {f.mode: f for f in rule_findings(run)}
    check = run.tool_calls[1]
    assert check.tool_kind == "verify" and check.verification_passed is False
    assert "FM-3.3" in findings and check.span_id in findings["FM-3.3"].evidence_span_ids


def test_a_passing_check_inside_a_result_wrapper_is_read_as_passed():
    run = _checked_run('{"result": "checkout: healthy, 3/3 ready"}')
    assert "FM-3.3" not in {f.mode for f in rule_findings(run)}
    assert run.tool_calls[1].verification_passed is True


LOG_TEXT = "ERROR 2026-01-01 connection refused to payments:8080\nINFO retrying"


def _last_call_run(tool: str, result: str, kind: str | None = None) -> Run:
    """An agent whose last step is ``tool`` returning ``result`` with its span status OK."""
    root = _normalized("invoke_agent sre", "01" * 8, None, 1, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "sre"})
    root.end_ns = 100
    # an answer that gives up: whether the run stopped at a failure then rests on the tool call alone
    root.hints = RunHints(final_answer="I could not get the payments service back.", termination_reason="final_answer")
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
             "gen_ai.tool.call.arguments": '{"service": "payments"}', "gen_ai.tool.call.result": result}
    if kind is not None:
        attrs["mast.tool.kind"] = kind
    return Run.from_spans(TRACE, [root, _normalized(f"execute_tool {tool}", "02" * 8, root.span_id, 2, attrs)])


@pytest.mark.parametrize("tool, kind", [("tail_logs", None), ("get_logs", "read"), ("payments_logs", "read")])
def test_a_read_tool_returning_log_text_that_starts_with_error_did_not_fail(tool, kind):
    run = _last_call_run(tool, LOG_TEXT, kind)
    findings = rule_findings(run)
    assert not run.tool_calls[0].error and "FM-3.1" not in {f.mode for f in findings}


@pytest.mark.parametrize("tool, result", [
    ("restart_deployment", "Error: restart refused"),  # a tool that acts reports its refusal in words
    ("kubectl", "Error: restart refused"),  # a tool of unknown kind: its words count
    ("get_logs", '{"status": "error", "message": "log store unreachable"}'),  # a read tool's structured error
    ("get_logs", "Error executing tool: log store unreachable"),  # the framework's words for a raised exception
])
def test_a_failure_a_tool_returned_still_ends_the_run_prematurely(tool, result):
    run = _last_call_run(tool, result)
    findings = {f.mode: f for f in rule_findings(run)}
    assert run.tool_calls[0].error and "FM-3.1" in findings


def test_a_run_that_stops_on_a_model_turn_asking_for_tools_was_cut_off_by_a_quiet_limit():
    """A limit that raises nothing (AutoGen's max_turns, a step count that just ends the loop) leaves a run
    whose last model call asked for tools and got no answer after; one answered after its tools is a near
    miss, and a lone call (a fragment, a one-shot tool use) says nothing."""
    from mast_otel.processors.hints import derive_hints
    from mast_otel.processors.model import Role, Run, Span

    def run(*, calls: int, answered: bool) -> Run:
        t = "ef" * 16
        spans = [Span(t, "01" * 8, None, "invoke_agent a", 0, 1000, role=Role.AGENT, agent_name="a")]
        for i in range(calls):
            spans.append(Span(t, f"{2 * i + 2:016x}", "01" * 8, "chat m", 10 * i + 1, 10 * i + 5, role=Role.LLM,
                              requested_tools=("get_logs",)))
            spans.append(Span(t, f"{2 * i + 3:016x}", "01" * 8, "execute_tool get_logs", 10 * i + 6, 10 * i + 9,
                              role=Role.TOOL, tool_name="get_logs"))
        if answered:
            spans.append(Span(t, "ff" * 8, "01" * 8, "chat m", 500, 510, role=Role.LLM))
        return derive_hints(Run.from_spans(t, spans))

    cut = run(calls=4, answered=False)
    assert cut.hints.termination_reason == "max_steps" and "quietly" in cut.hints.derived["termination_reason"]
    assert run(calls=4, answered=True).hints.termination_reason is None
    assert run(calls=1, answered=False).hints.termination_reason is None
