"""Live detection fed span by span in the order spans end (children before their agent)."""

from __future__ import annotations

from mast_otel.processors.config import DetectionConfig, TerminationConfig
from mast_otel.processors.detectors import LiveDetection, diagnose
from mast_otel.processors.model import Role


def feed(live: LiveDetection, spans) -> list[tuple[str, str]]:
    """(span id that raised it, mode) per newly raised finding, in arrival order."""
    out = []
    for span in sorted(spans, key=lambda s: s.end_ns):
        for f in live.observe(span):
            assert f.live and f.source == "rules"
            out.append((span.span_id, f.mode))
    return out


def test_repetition_raised_on_the_third_identical_call_and_only_once(rb) -> None:
    a = rb.agent()
    calls = [rb.tool(a, "get_pods", {"ns": "x"}, "same") for _ in range(5)]
    raised = feed(LiveDetection(), rb.run().spans)
    assert raised == [(calls[2].span_id, "FM-1.3")]
    # The final diagnosis agrees with what live detection raised.
    assert {f.mode for f in diagnose(rb.run())} == {"FM-1.3"}


def test_converging_poll_raises_nothing(rb) -> None:
    a = rb.agent()
    for status in ("Pending", "Pending", "Running", "Running"):
        rb.tool(a, "get_pods", {}, status)
    assert feed(LiveDetection(), rb.run().spans) == []


def test_sub_agent_budget_raised_when_its_agent_span_ends_before_the_run_does(rb) -> None:
    lead = rb.agent("lead")
    rb.llm(lead)
    sub = rb.agent("fixer", parent=lead, max_steps=2)
    inner = [rb.tool(sub, "restart", {"i": i}, "ok") for i in range(3)]
    run = rb.run()
    sub.end_ns = inner[-1].end_ns + 1  # the sub-agent ends before the lead
    raised = feed(LiveDetection(), run.spans)
    assert raised == [(sub.span_id, "FM-1.5")]


def test_run_wide_step_limit_raises_while_in_flight(rb) -> None:
    a = rb.agent()
    steps = [rb.llm(a) for _ in range(4)]
    live = LiveDetection(DetectionConfig(termination=TerminationConfig(default_max_steps=3)))
    assert feed(live, [s for s in rb.run().spans if s.role is not Role.AGENT]) == [(steps[3].span_id, "FM-1.5")]
    assert live.raised == {"FM-1.5"}


def test_mismatch_and_history_raised_live(rb) -> None:
    a = rb.agent()
    rb.llm(a, input_message_count=2)
    rb.llm(a, input_message_count=9, requested_tools=("get_logs",))
    ran = rb.tool(a, "delete_pod", {}, "ok")
    drop = rb.llm(a, input_message_count=3)
    raised = feed(LiveDetection(), rb.run().spans)
    # the tool call is judged once a later model call shows its own was already in
    assert sorted(raised) == [(drop.span_id, "FM-1.4"), (drop.span_id, "FM-2.6")] and ran.span_id


def test_disabled_modes_and_live_off(rb) -> None:
    a = rb.agent()
    for _ in range(3):
        rb.tool(a, "get_pods", {}, "same")
    spans = rb.run().spans
    assert feed(LiveDetection(DetectionConfig(disabled_modes=["FM-1.3"])), spans) == []
    assert feed(LiveDetection(DetectionConfig(live=False)), spans) == []


def test_a_live_loop_is_raised_once_and_its_finding_grows_to_the_full_run(rb) -> None:
    a = rb.agent()
    calls = [rb.tool(a, "get_pods", {"ns": "x"}, "same") for _ in range(6)]
    run = rb.run()
    live = LiveDetection()
    assert feed(live, run.spans) == [(calls[2].span_id, "FM-1.3")]
    (grown,) = live.findings_of("repetition")
    assert grown.evidence_span_ids == tuple(c.span_id for c in calls) and "called 6 times" in grown.explanation
    # The whole-run diagnosis reusing the live trackers and one replaying the steps agree.
    (reused,) = [f for f in diagnose(run, live=live) if f.mode == "FM-1.3"]
    (replayed,) = [f for f in diagnose(run) if f.mode == "FM-1.3"]
    assert reused == replayed and reused.evidence_span_ids == grown.evidence_span_ids and not reused.live


def _ends_late(call, tool) -> None:
    """litellm ends a chat span in a background callback: after the tool call it asked for."""
    call.end_ns = tool.end_ns + 1


def test_a_model_call_ending_after_its_tool_call_raises_no_mismatch(rb) -> None:
    a = rb.agent()
    rb.llm(a, requested_tools=("get_pods",))
    rb.tool(a, "get_pods", {}, "CrashLoopBackOff")
    ask = rb.llm(a, requested_tools=("restart_deployment",))
    fix = rb.tool(a, "restart_deployment", {"d": "checkout"}, "restarted")
    rb.llm(a, output_text="Restarted checkout.")
    run = rb.run()
    _ends_late(ask, fix)
    live = LiveDetection()
    assert feed(live, run.spans) == [] and "FM-2.6" not in live.raised
    assert "FM-2.6" not in {f.mode for f in diagnose(run, live=live)}


def test_a_real_mismatch_is_still_raised_when_its_model_call_ends_late(rb) -> None:
    a = rb.agent()
    rb.llm(a, requested_tools=("get_pods",))
    rb.tool(a, "get_pods", {}, "CrashLoopBackOff")
    ask = rb.llm(a, requested_tools=("get_logs",))
    ran = rb.tool(a, "delete_pod", {"p": "checkout-1"}, "deleted")
    after = rb.llm(a, output_text="Deleted the pod.")
    run = rb.run()
    _ends_late(ask, ran)
    raised = feed(LiveDetection(), run.spans)
    assert raised == [(after.span_id, "FM-2.6")]  # once the next model call shows ``ask`` was in
    (f,) = [f for f in diagnose(run) if f.mode == "FM-2.6"]
    assert f.evidence_span_ids == (ask.span_id, ran.span_id)


def test_a_mismatch_in_the_last_turn_is_raised_when_the_agent_span_arrives(rb) -> None:
    a = rb.agent()
    ask = rb.llm(a, requested_tools=("get_logs",))
    ran = rb.tool(a, "delete_pod", {"p": "checkout-1"}, "deleted")
    run = rb.run()
    _ends_late(ask, ran)
    a.end_ns = ask.end_ns + 1
    assert feed(LiveDetection(), run.spans) == [(a.span_id, "FM-2.6")]
