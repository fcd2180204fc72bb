"""A run's own step budget checked live, from the budget its steps carry, before its agent span arrives."""

from __future__ import annotations

from mast_otel.processors.detectors import LiveDetection, diagnose
from mast_otel.processors.model import Role


def in_end_order(spans):
    return sorted(spans, key=lambda s: s.end_ns)


def first_raise(live: LiveDetection, spans, mode: str = "FM-1.5"):
    """(position in end order, span, finding) of the first ``mode`` finding, or None."""
    for i, span in enumerate(in_end_order(spans)):
        for f in live.observe(span):
            if f.mode == mode:
                return i, span, f
    return None


def looping_run(rb, steps: int, budget: int | None, *, carry: bool = True):
    """One agent with ``steps`` iterations (a model call and a tool call each)."""
    lead = rb.agent("triage", max_steps=budget)
    extra = {"step_budget": budget, "agent_name": "triage"} if carry else {}
    for i in range(steps):
        rb.llm(lead, step_index=i, **extra)
        rb.tool(lead, "kubectl_get", {"pod": i}, f"r{i}", kind="read", step_index=i, **extra)
    return lead, rb.run()


def test_budget_overrun_is_raised_on_the_first_step_past_it_before_the_agent_span(rb) -> None:
    lead, run = looping_run(rb, steps=6, budget=3)
    found = first_raise(LiveDetection(), run.spans)
    assert found is not None
    position, span, f = found
    ordered = in_end_order(run.spans)
    assert ordered[-1] is lead and position < len(ordered) - 1  # the agent span had not arrived
    assert span.role is Role.LLM and span.step_index == 3  # the fourth iteration's first span
    assert f.live and "'triage'" in f.explanation and "budget of 3" in f.explanation
    assert span.span_id in f.evidence_span_ids
    # the final diagnosis agrees, so the pipeline confirms it rather than withdrawing it
    assert "FM-1.5" in {g.mode for g in diagnose(run)}


def test_within_budget_raises_nothing(rb) -> None:
    _, run = looping_run(rb, steps=3, budget=3)
    assert first_raise(LiveDetection(), run.spans) is None


def test_without_the_budget_on_steps_it_waits_for_the_agent_span(rb) -> None:
    lead, run = looping_run(rb, steps=6, budget=3, carry=False)
    position, span, _ = first_raise(LiveDetection(), run.spans)
    assert span is lead and position == len(run.spans) - 1


def test_model_calls_inside_a_tool_count_for_the_tools_agent(rb) -> None:
    """Steps under a tool span are grouped under it until the tool span arrives with its parent."""
    lead = rb.agent("triage", max_steps=2)
    kw = {"step_budget": 2, "agent_name": "triage"}
    rb.llm(lead, step_index=0, **kw)
    planner = rb.tool(lead, "plan", {"q": 1}, "ok", step_index=0, **kw)
    inner = [rb.llm(planner, step_index=i, **kw) for i in (1, 2)]
    run = rb.run()
    planner.end_ns = inner[-1].end_ns + 1  # the tool ends after the model calls it made
    live = LiveDetection()
    raised = [(s.span_id, f.mode) for s in in_end_order(run.spans) for f in live.observe(s)]
    # the inner calls alone are within budget; the tool's arrival joins them with the agent's step 0
    assert raised and raised[0] == (planner.span_id, "FM-1.5")


def test_a_sub_agent_keeps_its_own_count(rb) -> None:
    lead = rb.agent("lead", max_steps=3)
    lead_kw = {"step_budget": 3, "agent_name": "lead"}
    for i in range(2):
        rb.llm(lead, step_index=i, **lead_kw)
    sub = rb.agent("fixer", parent=lead, max_steps=5)
    for i in range(3):  # 2 + 3 iterations would pass the lead's budget if they were pooled
        rb.tool(sub, "restart", {"i": i}, "ok", step_index=i, step_budget=5, agent_name="fixer")
    assert first_raise(LiveDetection(), rb.run().spans) is None
