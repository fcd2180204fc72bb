"""Shortcuts taken for speed must agree with the long way round.

``RunContext`` groups steps by agent once; live detection skips the budget walk when the run
has too few steps to overrun; the mismatch tracker tries an exact name match before
normalizing names. Each test builds a case where a wrong shortcut would change the verdict.
"""

from __future__ import annotations

from mast_otel.processors.config import DetectionConfig
from mast_otel.processors.detectors import LiveDetection, diagnose
from mast_otel.processors.detectors.context import RunContext, iterations
from mast_otel.processors.model import Role


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


def _run_with_live_signals(rb):
    """A run on which the three replayed trackers (repetition, mismatch, history) each find something."""
    a = rb.agent()
    rb.llm(a, input_message_count=2)
    rb.llm(a, input_message_count=9, requested_tools=("get_logs",))
    rb.tool(a, "delete_pod", {}, "ok")
    for _ in range(3):
        rb.tool(a, "get_pods", {"ns": "web"}, "same")
    rb.llm(a, input_message_count=3)
    return rb.run()


def _fed(run, config, order=None) -> LiveDetection:
    live = LiveDetection(config)
    for span in order or sorted(run.spans, key=lambda s: s.end_ns):
        live.observe(span)
    return live


def test_reused_live_trackers_give_the_findings_of_a_replay(rb) -> None:
    config = DetectionConfig()
    run = _run_with_live_signals(rb)
    live = _fed(run, config)

    assert RunContext(run, config, live).live_saw_steps()  # the work is reused...
    reused = diagnose(run, config, live)
    assert reused == diagnose(run, config)  # ...and gives what replaying gives
    assert {"FM-1.3", "FM-1.4", "FM-2.6"} <= {f.mode for f in reused}
    assert not any(f.live for f in reused)  # live marks are the merge stage's to set


def test_live_trackers_are_not_reused_for_steps_they_did_not_see_as_they_are(rb) -> None:
    config = DetectionConfig()
    run = _run_with_live_signals(rb)
    steps = run.steps
    tools = [s for s in run.spans if s.role.value == "tool"]

    swapped = list(run.spans)
    i, j = swapped.index(tools[0]), swapped.index(tools[1])
    swapped[i], swapped[j] = swapped[j], swapped[i]
    assert not _fed(run, config, swapped).saw(steps, config)  # ended out of start order
    assert not _fed(run, config).saw(steps, DetectionConfig())  # other thresholds

    live = _fed(run, config)
    tools[1].result_hash = tools[2].result_hash = "changed"  # derived after being observed
    assert not live.saw(steps, config)
    assert diagnose(run, config, live) == diagnose(run, config)
    assert not any(f.mode == "FM-1.3" for f in diagnose(run, config, live))  # the streak is broken now


def test_live_trackers_are_not_reused_when_steps_sit_below_another_span_than_their_agent(rb) -> None:
    config = DetectionConfig()
    a = rb.agent()
    chain = rb._span(Role.OTHER, "chain", a, None)
    rb.llm(chain, input_message_count=2)
    rb.llm(chain, input_message_count=9)
    rb.llm(chain, input_message_count=3)
    run = rb.run()
    live = _fed(run, config)
    assert live.saw(run.steps, config)  # the same steps...
    assert not RunContext(run, config, live).live_saw_steps()  # ...but live keys by parent, replay by agent
    assert diagnose(run, config, live) == diagnose(run, config)


def test_live_detection_sees_a_derived_change_on_any_tool_field(rb) -> None:
    config = DetectionConfig()
    run = _run_with_live_signals(rb)
    steps = run.steps
    tools = [s for s in run.spans if s.role.value == "tool"]
    for field, value in (("args_hash", "other"), ("error", True), ("error_type", "x"), ("tool_kind", "verify")):
        live = _fed(run, config)
        assert live.saw(steps, config)
        old = getattr(tools[-1], field)
        setattr(tools[-1], field, value)  # the last tool call, the last of the fields kept for it
        assert not live.saw(steps, config), field
        setattr(tools[-1], field, old)


def test_live_detection_answers_for_every_tracker_it_made_and_only_those(rb) -> None:
    a = rb.agent()
    rb.llm(a, input_message_count=2)
    run = rb.run()
    config = DetectionConfig()
    live = _fed(run, config)
    assert live.raised == frozenset()
    assert live.findings_of("repetition") == [] and live.findings_of("mismatch") == []  # made, found nothing
    assert live.findings_of("task_constraints") is None  # no live tracker

    config.disabled_modes = ["FM-1.3"]  # the enabled trackers follow the config, even a changed one
    assert LiveDetection(config).findings_of("repetition") is None
    assert LiveDetection(config).findings_of("mismatch") == []


def _walked(run, config) -> RunContext:
    """The context built by the per-span walk, whatever the run looks like."""
    from mast_otel.processors.detectors import context

    original = context._lone_agent
    context._lone_agent = lambda run: None
    try:
        return RunContext(run, config)
    finally:
        context._lone_agent = original


def _same_context(run, config) -> bool:
    fast, walked = RunContext(run, config), _walked(run, config)
    return (fast.keyed_steps == walked.keyed_steps and fast.scopes == walked.scopes
            and all(fast.scope(s) == walked.scope(s) for s in run.spans)
            and all(fast.steps_of(sc) == walked.steps_of(sc) and fast.tool_calls_of(sc) == walked.tool_calls_of(sc)
                    and fast.iterations_of(sc) == walked.iterations_of(sc) for sc in walked.scopes)
            and fast.scope_by_id(None) == walked.scope_by_id(None)
            and fast._keyed_by_parent == walked._keyed_by_parent)


def test_a_lone_agent_run_takes_the_short_path_to_the_context_the_walk_builds(rb) -> None:
    from mast_otel.processors.detectors.context import _lone_agent

    config = DetectionConfig()
    run = _run_with_live_signals(rb)
    assert _lone_agent(run) == {s.span_id: run.root.span_id for s in run.spans}  # every span right below the one agent
    assert _same_context(run, config)
    assert diagnose(run, config, _fed(run, config)) == diagnose(run, config)


def test_runs_the_short_path_would_get_wrong_take_the_walk(rb) -> None:
    from mast_otel.processors.detectors.context import _lone_agent

    config = DetectionConfig()
    a = rb.agent(max_steps=1)
    rb.llm(a)
    chain = rb._span(Role.OTHER, "chain", a, None)
    rb.tool(chain, "get_pods", {}, "x")  # a step below another span than its agent
    run = rb.run()
    assert _lone_agent(run) is None and _same_context(run, config)

    rb.spans.remove(chain)  # the step's parent is missing: it belongs to no agent
    run = rb.run()
    assert _lone_agent(run) is None and _same_context(run, config)
    assert _walked(run, config).scope(run.steps[-1]).span_id is None

    rb.spans[-1].parent_span_id = a.span_id
    rb.agent("worker", parent=a)  # a second agent
    run = rb.run()
    assert _lone_agent(run) is None and _same_context(run, config)


def test_the_run_model_is_the_most_used_one_with_or_without_the_one_model_shortcut(rb) -> None:
    a = rb.agent()
    for _ in range(3):
        rb.llm(a, model="m1")
    assert rb.run().model == "m1"  # one model made every call: the shortcut
    rb.llm(a, model="m2"), rb.llm(a, model="m2"), rb.llm(a, model="m2"), rb.llm(a, model="m2")
    assert rb.run().model == "m2"  # mixed: counted
    rb.spans[1].model = None
    assert rb.run().model == "m2"
    for span in rb.spans[2:]:
        span.model = None
    assert rb.run().model is None  # no call named its model


def test_the_whole_run_mismatch_check_agrees_with_the_live_search_on_every_recorded_run() -> None:
    """Whole-run, a tool call is judged against its agent's latest model call so far; live, tool calls are
    held and the model call is searched by start time. Fed the same steps in start order (live, the agents'
    spans last, which settle what is held), both must raise the same mismatches, on real framework and
    team recordings and on a planted one."""
    from mast_otel.processors.detectors.context import RunContext
    from mast_otel.processors.detectors.mismatch import MismatchTracker
    from mast_otel.processors.hints import derive_hints
    from mast_otel.processors.ingest.files import load_runs
    from tests.frameworks.corpus_files import recordings
    from tests.teams.corpus_files import recordings as team_recordings

    compared = found = 0
    for rec in recordings() + team_recordings():
        for run in load_runs([rec.path]):
            if not run.steps:
                continue
            derive_hints(run)
            if rec.scenario.name == "clean":  # plant a mismatch: the first tool call the model asked for runs as another
                planted = next((s for s in run.tool_calls if s.tool_name), None)
                if planted is not None:  # (an instrumentation that writes no tool spans has none to plant on)
                    planted.tool_name = "delete_namespace"
            ctx = RunContext(run, DetectionConfig())
            whole, live = MismatchTracker(), MismatchTracker(live=True)
            plain = [f for s, key in ctx.keyed_steps if (f := whole.observe(s, key)) is not None]
            searched = [f for s, key in ctx.keyed_steps if (f := live.observe(s, key)) is not None]
            searched += [f for a in sorted(run.agent_spans, key=lambda a: a.parent_span_id is None)
                         if (f := live.observe(a, a.span_id)) is not None]
            assert [(f.mode, f.evidence_span_ids) for f in plain] == [(f.mode, f.evidence_span_ids) for f in searched], rec.id
            compared, found = compared + 1, found + len(plain)
    assert compared > 300 and found >= 20  # the planted ones (and any the corpus has) were found both ways
