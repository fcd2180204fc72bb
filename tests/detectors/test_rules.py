"""Each rule detector on small runs: clear positives with their evidence, and near misses."""

from __future__ import annotations

import pytest

from mast_otel.processors import taxonomy
from mast_otel.processors.config import DetectionConfig, RepetitionConfig, TerminationConfig
from mast_otel.processors.detectors import DETECTORS, diagnose, rule_modes
from mast_otel.processors.model import Run


def modes(run, config=None) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in diagnose(run, config):
        out.setdefault(f.mode, []).append(f)
    return out


def only(run, mode, config=None):
    found = modes(run, config).get(mode, [])
    assert len(found) == 1, found
    return found[0]


def test_registry_covered_by_agrees_with_the_detector_table() -> None:
    ruled = {m.id for m in taxonomy.MODES.values() if "rules" in m.covered_by}
    assert ruled == set(rule_modes())
    assert "FM-2.3" not in ruled  # derailment needs reading: the judge only
    assert all("judge" in m.covered_by for m in taxonomy.MODES.values())
    assert len({d.name for d in DETECTORS}) == len(DETECTORS)


# --- FM-1.3 ------------------------------------------------------------------------------
def test_same_call_same_result_three_times_is_repetition(rb) -> None:
    a = rb.agent()
    calls = [rb.tool(a, "get_pods", {"ns": "prod"}, "CrashLoopBackOff") for _ in range(3)]
    f = only(rb.run(), "FM-1.3")
    assert f.evidence_span_ids == tuple(c.span_id for c in calls)
    assert "get_pods" in f.explanation and f.confidence >= 0.8 and not f.live


def test_polling_that_sees_a_change_is_not_repetition(rb) -> None:
    a = rb.agent()
    for status in ("Pending", "Pending", "Running", "Running"):
        rb.tool(a, "get_pods", {"ns": "prod"}, status)
    assert "FM-1.3" not in modes(rb.run())


def test_identical_failing_calls_loop_but_other_arguments_do_not(rb) -> None:
    a = rb.agent()
    rb.tool(a, "restart", {"pod": "a"}, error=True, error_type="Timeout")
    rb.tool(a, "restart", {"pod": "b"}, error=True, error_type="Timeout")
    rb.tool(a, "restart", {"pod": "a"}, error=True, error_type="Timeout")
    assert "FM-1.3" not in modes(rb.run())
    rb.tool(a, "restart", {"pod": "a"}, error=True, error_type="Timeout")
    assert "failed the same way" in only(rb.run(), "FM-1.3").explanation


def test_repeated_model_output_and_threshold_override(rb) -> None:
    a = rb.agent()
    outs = [rb.llm(a, output_text=t) for t in ("Checking logs.", "checking   LOGS.", "Done?")]
    assert "FM-1.3" not in modes(rb.run())
    cfg = DetectionConfig(repetition=RepetitionConfig(min_output_repeats=2, min_output_chars=1))
    assert only(rb.run(), "FM-1.3", cfg).evidence_span_ids == (outs[0].span_id, outs[1].span_id)


# --- FM-1.5 ------------------------------------------------------------------------------
def test_step_budget_exceeded_names_the_steps_past_the_budget(rb) -> None:
    a = rb.agent(max_steps=2)
    steps = [rb.llm(a) for _ in range(4)]
    f = only(rb.run(), "FM-1.5")
    assert f.evidence_span_ids == (a.span_id, steps[2].span_id, steps[3].span_id)
    assert "4 steps against a budget of 2" in f.explanation


def test_cut_off_by_max_steps_or_timeout_and_never_ending(rb) -> None:
    a = rb.agent(termination_reason="timeout")
    rb.llm(a)
    assert "timeout" in only(rb.run(), "FM-1.5").explanation
    a.hints.termination_reason = "final_answer"
    assert "FM-1.5" not in modes(rb.run())


def test_an_abandoned_run_is_judged_on_its_steps_and_their_budget(rb) -> None:
    a = rb.agent()
    steps = [rb.llm(a) for _ in range(4)]
    arrived = [s for s in rb.run().spans if s is not a]  # the agent span never arrived
    run = Run.from_spans(a.trace_id, arrived, completion="abandoned")
    assert "FM-1.5" not in modes(run)  # a missing end alone is no evidence
    for s in steps:
        s.step_budget = 2  # the budget the instrumentation writes on every step
    f = only(run, "FM-1.5")
    assert "4 steps against a budget of 2" in f.explanation and f.evidence_span_ids == (steps[2].span_id, steps[3].span_id)


def test_an_abandoned_run_did_not_stop_after_its_last_error(rb) -> None:
    a = rb.agent()
    rb.tool(a, "restart", {"pod": "a"}, error=True)
    run = Run.from_spans(a.trace_id, [s for s in rb.run().spans if s is not a], completion="abandoned")
    assert "FM-3.1" not in modes(run)


def test_work_after_the_last_check_passed(rb) -> None:
    a = rb.agent()
    check = rb.tool(a, "health", {}, "ok", kind="verify", verification_passed=True)
    extra = [rb.tool(a, f"tweak{i}", {"i": i}, "done", kind="write") for i in range(4)]
    f = only(rb.run(), "FM-1.5")
    assert f.evidence_span_ids[:2] == (check.span_id, extra[0].span_id)
    # Fewer extra calls than the threshold: fine.
    assert "FM-1.5" not in modes(rb.run(), DetectionConfig(termination=TerminationConfig(steps_after_success=5)))


def test_run_wide_step_limit_is_off_by_default(rb) -> None:
    a = rb.agent()
    for _ in range(6):
        rb.llm(a)
    assert "FM-1.5" not in modes(rb.run())
    assert only(rb.run(), "FM-1.5", DetectionConfig(termination=TerminationConfig(default_max_steps=5)))


# --- FM-3.1 ------------------------------------------------------------------------------
def test_stop_right_after_an_error(rb) -> None:
    a = rb.agent(termination_reason="final_answer")
    rb.tool(a, "get_logs", {"p": 1}, "lines")
    bad = rb.tool(a, "rollback", {"to": "v1"}, error=True)
    rb.llm(a, output_text="I could not finish.")
    f = only(rb.run(), "FM-3.1")
    assert f.evidence_span_ids == (bad.span_id, a.span_id) and "rollback" in f.explanation


def test_retry_after_an_error_that_then_succeeded_is_fine(rb) -> None:
    a = rb.agent(termination_reason="final_answer")
    rb.tool(a, "rollback", {"to": "v1"}, error=True)
    rb.tool(a, "rollback", {"to": "v1"}, "rolled back")
    assert "FM-3.1" not in modes(rb.run())


def test_giving_up_with_budget_left(rb) -> None:
    a = rb.agent(max_steps=20, claimed_success=False, termination_reason="final_answer")
    rb.llm(a)
    rb.tool(a, "get_pods", {}, "pods")
    assert "1 of its 20" in only(rb.run(), "FM-3.1").explanation  # a model call and its tool call: one step
    a.hints.max_steps = 1  # used 1 of 1: more than half, not giving up early
    assert "FM-3.1" not in modes(rb.run())


# --- FM-3.2 / FM-3.3 ---------------------------------------------------------------------
def test_write_without_later_check_before_claimed_success(rb) -> None:
    a = rb.agent(claimed_success=True)
    rb.tool(a, "health", {}, "ok", kind="verify", verification_passed=True)
    w = rb.tool(a, "scale", {"replicas": 3}, "scaled", kind="write")
    f = only(rb.run(), "FM-3.2")
    assert f.evidence_span_ids == (w.span_id, a.span_id)
    rb.tool(a, "health", {}, "ok2", kind="verify", verification_passed=True)
    assert "FM-3.2" not in modes(rb.run())


def test_no_claim_no_verification_finding(rb) -> None:
    a = rb.agent(claimed_success=False)
    rb.tool(a, "scale", {"replicas": 3}, "scaled", kind="write")
    assert "FM-3.2" not in modes(rb.run())


def test_success_claimed_after_a_failed_check(rb) -> None:
    a = rb.agent(termination_reason="final_answer")
    rb.tool(a, "scale", {"replicas": 3}, "scaled", kind="write")
    check = rb.tool(a, "health", {}, "503", kind="verify", verification_passed=False)
    rb.llm(a)
    f = only(rb.run(), "FM-3.3")
    assert f.evidence_span_ids == (check.span_id, a.span_id)
    assert "FM-3.1" in modes(rb.run())  # it also stopped right after the failed check


def test_passed_verification_is_not_incorrect(rb) -> None:
    a = rb.agent(claimed_success=True)
    rb.tool(a, "health", {}, "503", kind="verify", verification_passed=False)
    rb.tool(a, "restart", {}, "ok", kind="write")
    rb.tool(a, "health", {}, "200", kind="verify", verification_passed=True)
    assert {"FM-3.1", "FM-3.2", "FM-3.3"}.isdisjoint(modes(rb.run()))


def test_success_claimed_when_every_tool_failed(rb) -> None:
    a = rb.agent(claimed_success=True)
    t = [rb.tool(a, "query", {"q": i}, error=True) for i in range(2)]
    assert only(rb.run(), "FM-3.3").evidence_span_ids == (t[0].span_id, t[1].span_id, a.span_id)


# --- FM-1.4 / FM-2.1 ---------------------------------------------------------------------
def test_context_shrinking_mid_run_is_lost_history(rb) -> None:
    a = rb.agent()
    calls = [rb.llm(a, input_message_count=n) for n in (2, 6, 10, 4)]
    f = only(rb.run(), "FM-1.4")
    assert f.evidence_span_ids == (calls[2].span_id, calls[3].span_id)
    assert "FM-2.1" not in modes(rb.run())


def test_context_back_to_the_start_is_a_reset(rb) -> None:
    a = rb.agent()
    calls = [rb.llm(a, input_message_count=n) for n in (2, 5, 8, 2)]
    assert only(rb.run(), "FM-2.1").evidence_span_ids == (calls[2].span_id, calls[3].span_id)
    assert "FM-1.4" not in modes(rb.run())


def test_growing_context_and_separate_agents_are_fine(rb) -> None:
    root = rb.agent("lead")
    sub = rb.agent("helper", parent=root)
    for n in (2, 6, 10):
        rb.llm(root, input_message_count=n)
    rb.llm(sub, input_message_count=2)  # a sub-agent starts its own, short context
    rb.llm(root, input_message_count=12)
    assert {"FM-1.4", "FM-2.1"}.isdisjoint(modes(rb.run()))


def test_asking_again_for_what_was_answered(rb) -> None:
    a = rb.agent()
    first = rb.tool(a, "ask_user", {"q": "which cluster?"}, "prod-eu", kind="clarify")
    again = rb.tool(a, "ask_user", {"q": "which cluster?"}, "prod-eu", kind="clarify")
    assert only(rb.run(), "FM-1.4").evidence_span_ids == (first.span_id, again.span_id)


def test_task_text_dropping_out_of_the_model_input(rb) -> None:
    task = "Find why checkout pods restart"
    a = rb.agent(task=task)
    first = rb.llm(a, input_text=f"system... user: {task} ... tool output")
    later = rb.llm(a, input_text="summary: pods")
    assert only(rb.run(), "FM-1.4").evidence_span_ids == (first.span_id, later.span_id)


# --- FM-1.1 / FM-1.2 / FM-2.2 / FM-2.6 ---------------------------------------------------
def test_write_in_a_read_only_task(rb) -> None:
    a = rb.agent(constraints=("Read-Only",))
    rb.tool(a, "get_pods", {}, "x", kind="read")
    w = rb.tool(a, "delete_pod", {"p": 1}, "deleted", kind="write")
    f = only(rb.run(), "FM-1.1")
    assert f.evidence_span_ids == (w.span_id, a.span_id) and "read_only" in f.explanation


def test_forbidden_tool_constraint_and_read_only_run_without_writes(rb) -> None:
    a = rb.agent(constraints=("read_only", "forbid_tool:exec"))
    rb.tool(a, "get_pods", {}, "x", kind="read")
    assert "FM-1.1" not in modes(rb.run())
    e = rb.tool(a, "exec", {}, "x", kind="read")
    assert only(rb.run(), "FM-1.1").evidence_span_ids[0] == e.span_id


def test_multi_agent_role_each_held_to_its_own_allowed_tools(rb) -> None:
    lead = rb.agent("lead", allowed_tools=("handoff_fixer", "get_pods"), constraints=("read_only",))
    rb.tool(lead, "get_pods", {}, "x", kind="read")
    fixer = rb.agent("fixer", parent=lead, allowed_tools=("restart",))
    ok = rb.tool(fixer, "restart", {}, "ok", kind="other")
    bad = rb.tool(fixer, "delete_ns", {}, "ok", kind="write")
    found = modes(rb.run())
    role = found["FM-1.2"]
    assert len(role) == 1 and role[0].evidence_span_ids == (bad.span_id, fixer.span_id)
    assert "'fixer'" in role[0].explanation and ok.span_id not in role[0].evidence_span_ids
    # The lead's read-only constraint binds the sub-agent it delegated to.
    assert found["FM-1.1"][0].evidence_span_ids == (bad.span_id, fixer.span_id)


def test_mutating_an_ambiguous_request_without_asking(rb) -> None:
    a = rb.agent(ambiguous=True)
    w = rb.tool(a, "scale", {"n": 5}, "ok", kind="write")
    assert only(rb.run(), "FM-2.2").evidence_span_ids == (w.span_id, a.span_id)


def test_a_clarification_asked_first_is_fine(rb) -> None:
    a = rb.agent(ambiguous=True, claimed_success=True)
    rb.tool(a, "ask_user", {"q": "how many?"}, "5", kind="clarify")
    rb.tool(a, "scale", {"n": 5}, "ok", kind="write")
    assert "FM-2.2" not in modes(rb.run())


def test_declaring_an_ambiguous_request_done_without_asking(rb) -> None:
    a = rb.agent(ambiguous=True, claimed_success=True)
    rb.tool(a, "get_pods", {}, "x", kind="read")
    f = only(rb.run(), "FM-2.2")
    assert f.evidence_span_ids == (a.span_id,) and f.confidence < 0.8


def test_model_announces_one_tool_and_another_runs(rb) -> None:
    a = rb.agent()
    call = rb.llm(a, requested_tools=("get_logs",))
    ran = rb.tool(a, "delete_pod", {}, "ok")
    assert only(rb.run(), "FM-2.6").evidence_span_ids == (call.span_id, ran.span_id)


def test_announced_tools_that_run_are_fine(rb) -> None:
    a = rb.agent()
    rb.llm(a, requested_tools=("get_logs", "get_pods"))
    rb.tool(a, "get_pods", {}, "ok")
    rb.tool(a, "get_logs", {}, "ok")
    rb.llm(a)
    rb.tool(a, "anything", {}, "ok")  # no announcement to hold it to
    assert "FM-2.6" not in modes(rb.run())


# --- config ------------------------------------------------------------------------------
def test_disabled_modes_and_unknown_thresholds(rb) -> None:
    a = rb.agent(max_steps=1, constraints=("read_only",))
    rb.tool(a, "rm", {}, "ok", kind="write")
    rb.tool(a, "rm", {}, "ok", kind="write")
    assert {"FM-1.1", "FM-1.5"} <= set(modes(rb.run()))
    left = modes(rb.run(), DetectionConfig(disabled_modes=["1.5"]))
    assert "FM-1.5" not in left and "FM-1.1" in left
    with pytest.raises(ValueError, match="unknown detection thresholds"):
        DetectionConfig(thresholds={"repetition.min_repeat": 2})


def test_explanations_never_carry_content(rb) -> None:
    secret = "password=hunter2"
    a = rb.agent(task=secret, claimed_success=True, constraints=("read_only",), max_steps=1)
    for _ in range(3):
        rb.llm(a, output_text=secret, input_text=secret, requested_tools=("x",))
        rb.tool(a, "rm", secret, secret, kind="write", tool_args=secret, tool_result=secret)
    found = diagnose(rb.run())
    assert len({f.mode for f in found}) >= 4
    assert all(secret not in f.explanation for f in found)


def test_no_steps_no_findings(rb) -> None:
    rb.agent(max_steps=1)
    assert diagnose(rb.run()) == []


def test_a_model_call_and_its_tool_calls_are_one_step_of_the_budget() -> None:
    """The budget counts iterations (mast.step.index), not spans."""
    from mast_otel.processors.detectors import diagnose
    from mast_otel.processors.detectors.context import iterations
    from mast_otel.processors.model import Role, Run, RunHints, Span

    def span(sid: str, role: Role, start: int, index: int | None, **kw) -> Span:
        return Span("a" * 32, sid, "root", sid, start, start + 1, role=role, step_index=index, **kw)

    steps = []
    for i in range(3):
        steps.append(span(f"llm{i}", Role.LLM, 10 * i, i, model="m"))
        steps.append(span(f"tool{i}", Role.TOOL, 10 * i + 5, i, tool_name="get_pods", tool_kind="read"))
    root = Span("a" * 32, "root", None, "invoke_agent sre", 0, 100, role=Role.AGENT, agent_name="sre",
                hints=RunHints(max_steps=3, termination_reason="final_answer"))
    within = Run.from_spans("a" * 32, [root, *steps])
    assert [len(g) for g in iterations(within.steps)] == [2, 2, 2]
    assert "FM-1.5" not in {f.mode for f in diagnose(within)}

    extra = span("llm3", Role.LLM, 40, 3, model="m")
    over = Run.from_spans("a" * 32, [root, *steps, extra])
    found = [f for f in diagnose(over) if f.mode == "FM-1.5"]
    assert found and "took 4 steps against a budget of 3" in found[0].explanation
    assert "llm3" in found[0].evidence_span_ids

    # Without step indices, each model call opens an iteration.
    unindexed = [Span("b" * 32, s.span_id, "root", s.name, s.start_ns, s.end_ns, role=s.role) for s in steps]
    assert [len(g) for g in iterations(unindexed)] == [2, 2, 2]


def test_whole_run_and_live_count_iterations_with_the_same_counter() -> None:
    """``iterations`` groups by the counter live detection uses, so both agree on every mix of spans."""
    from mast_otel.processors.detectors.context import IterationCounter, iterations
    from mast_otel.processors.model import Role, Span

    def span(sid: str, role: Role, index: int | None = None) -> Span:
        return Span("b" * 32, sid, "root", sid, 0, 1, role=role, step_index=index)

    steps = [span("t0", Role.TOOL),  # a tool call with no model call before it: its own iteration
             span("m1", Role.LLM), span("t1", Role.TOOL), span("t2", Role.TOOL),  # one iteration
             span("m2", Role.LLM, 5), span("t3", Role.TOOL),  # an unindexed call joins the indexed model call
             span("t4", Role.TOOL, 5),  # the same index: the same iteration
             span("t5", Role.TOOL, 6), span("t6", Role.TOOL)]  # after a tool call nothing is joined
    groups = iterations(steps)
    assert [[s.span_id for s in g] for g in groups] == [["t0"], ["m1", "t1", "t2"], ["m2", "t3", "t4"], ["t5"], ["t6"]]
    counter = IterationCounter()
    assert [counter.add(s) for s in steps] == [True, True, False, False, True, False, False, True, True]
    assert len(counter) == len(groups)


def test_a_long_loop_reports_its_full_length_with_every_call_as_evidence(rb) -> None:
    a = rb.agent()
    calls = [rb.tool(a, "get_pods", {"ns": "prod"}, "CrashLoopBackOff") for _ in range(6)]
    f = only(rb.run(), "FM-1.3")
    assert "called 6 times" in f.explanation
    assert f.evidence_span_ids == tuple(c.span_id for c in calls)
    assert f.anchor_span_id == calls[2].span_id  # where the repeats became a loop


def test_two_interleaved_loops_are_each_reported_whole(rb) -> None:
    a = rb.agent()
    pods, logs = [], []
    for _ in range(5):
        pods.append(rb.tool(a, "get_pods", {"ns": "prod"}, "CrashLoopBackOff"))
        logs.append(rb.tool(a, "get_logs", {"pod": "c-1"}, "OOMKilled"))
    found = modes(rb.run())["FM-1.3"]
    assert [f.evidence_span_ids for f in found] == [tuple(s.span_id for s in pods), tuple(s.span_id for s in logs)]
    assert all("called 5 times" in f.explanation for f in found)


def test_repeated_output_reports_every_repeat(rb) -> None:
    a = rb.agent()
    outs = [rb.llm(a, output_text="Checking the logs again now.") for _ in range(5)]
    f = only(rb.run(), "FM-1.3", DetectionConfig(repetition=RepetitionConfig(min_output_chars=1)))
    assert f.evidence_span_ids == tuple(o.span_id for o in outs) and "5 times" in f.explanation
