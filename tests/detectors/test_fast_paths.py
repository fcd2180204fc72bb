"""Shortcuts taken for speed must agree with the long way round.

``RunContext`` groups steps by agent once; live detection skips the budget walk when the run
has too few steps to overrun; the mismatch tracker tries an exact name match before
normalizing names. Each test builds a case where a wrong shortcut would change the verdict.
"""

from __future__ import annotations

from mast_otel.processors.config import DetectionConfig
from mast_otel.processors.detectors import LiveDetection, diagnose
from mast_otel.processors.detectors.context import RunContext, iterations


def test_scopes_and_their_steps_follow_the_agent_tree(rb) -> None:
    root = rb.agent("lead", max_steps=10)
    lead_call = rb.llm(root)
    sub = rb.agent("worker", parent=root, max_steps=1)
    worker_steps = [rb.llm(sub), rb.tool(sub, "get_pods", {}, "x"), rb.llm(sub), rb.tool(sub, "get_logs", {}, "y")]
    lead_tool = rb.tool(root, "restart", {}, "ok")
    ctx = RunContext(rb.run(), DetectionConfig())

    assert [s.name for s in ctx.scopes] == ["lead", "worker"]  # first-step order
    lead, worker = ctx.scopes
    assert ctx.steps_of(lead) == [lead_call, lead_tool]
    assert ctx.steps_of(worker) == worker_steps
    assert ctx.iterations_of(worker) == iterations(worker_steps) and len(ctx.iterations_of(worker)) == 2
    ctx.steps_of(worker).clear()  # a caller's copy: the context keeps its own
    assert ctx.steps_of(worker) == worker_steps
    over = [f for f in diagnose(rb.run()) if f.mode == "FM-1.5"]
    assert len(over) == 1 and "'worker' took 2 steps against a budget of 1" in over[0].explanation


def _live_modes(spans) -> list[str]:
    live = LiveDetection()
    return [f.mode for s in sorted(spans, key=lambda s: s.end_ns) for f in live.observe(s)]


def test_live_budget_shortcut_only_skips_runs_too_short_to_overrun(rb) -> None:
    a = rb.agent("sre", max_steps=2)
    rb.llm(a), rb.tool(a, "get_pods", {}, "x")
    rb.llm(a), rb.tool(a, "get_pods", {}, "y")
    assert "FM-1.5" not in _live_modes(rb.run().spans)  # 4 steps but 2 iterations: within budget
    rb.llm(a)
    assert "FM-1.5" in _live_modes(rb.run().spans)  # the third iteration is one too many


def test_mismatch_matches_names_exactly_or_after_normalizing(rb) -> None:
    a = rb.agent()
    rb.llm(a, requested_tools=("Get_Logs ",))
    rb.tool(a, "get_logs", {}, "ok")  # same tool, differently written
    assert "FM-2.6" not in [f.mode for f in diagnose(rb.run())]
    rb.llm(a, requested_tools=("get_logs",))
    rb.tool(a, "get_logs_v2", {}, "ok")
    assert [f.mode for f in diagnose(rb.run()) if f.mode == "FM-2.6"] == ["FM-2.6"]
