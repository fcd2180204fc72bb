"""Shortcuts taken for speed must agree with the long way round.

``RunContext`` groups steps by agent once (``shortcuts=False``: the walk), reuses live work and
skips checks with nothing to read; ``Run`` keeps its views between asks and counts one model
without a tally (``Run.shortcuts``); live detection skips the budget walk when the run has too
few steps to overrun; the mismatch tracker tries an exact name match before normalizing names.
Each test builds a case where a wrong shortcut would change the verdict; the property tests at
the end compare every switch's two sides on generated runs and on every recorded corpus.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast_otel.processors.config import DetectionConfig
from mast_otel.processors.detectors import LiveDetection, diagnose
from mast_otel.processors.detectors.context import RunContext, _lone_agent, iterations
from mast_otel.processors.hints import arrival, derive_hints, qualify
from mast_otel.processors.hints.settings import HintsConfig, ToolRule
from mast_otel.processors.attribution import build_diagnosis
from mast_otel.processors.model import Finding, Role, Run, RunHints, Span
from mast_otel.processors.team import build_team
from tests.detectors.conftest import TRACE


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


def test_live_trackers_are_not_reused_for_steps_given_to_another_agent_since() -> None:
    """Found by the generated traces below: hint derivation gives a team's steps to the agent that took
    them (``team.adopt_steps`` changes their parent), so live detection fed them under other keys; its
    context-reset finding (counts 1, 4, then 1 under one key) is not the diagnosis's (three agents)."""
    def span(sid: str, parent: str | None, role: Role, start: int, **kw) -> Span:
        name = "invoke_agent a" if role is Role.AGENT else "chat m"
        extra = dict(agent_name="sre", hints=RunHints()) if role is Role.AGENT else dict(model="m1")
        return Span(TRACE, sid, parent, name, start, start, role=role, **extra, **kw)

    root = "0000000000000001"
    spans = [span(root, None, Role.AGENT, 1000), span("0000000000000002", root, Role.LLM, 1000, input_message_count=1),
             span(root, root, Role.AGENT, 1000), span("0000000000000004", root, Role.AGENT, 1000),
             span("0000000000000005", root, Role.LLM, 1000, input_message_count=4),
             span("0000000000000006", root, Role.AGENT, 1000),
             span("0000000000000007", root, Role.LLM, 2000, input_message_count=1)]
    config = DetectionConfig()
    run = Run.from_spans(TRACE, spans, "offline")
    live = _fed(run, config)
    assert [f.mode for f in live.findings_of("history") or []] == ["FM-2.1"]
    steps = list(run.steps)
    derive_hints(run)
    assert run.steps == steps and [s.parent_span_id for s in steps] != [root] * 3  # the same steps, other agents
    assert live.saw(run.steps, config) and not live.keyed_alike(run.steps)
    assert not RunContext(run, config, live).live_saw_steps() and RunContext(run, config, live).live_saw_steps(keyed=False)
    assert diagnose(run, config, live) == diagnose(run, config) == []


def test_a_live_tracker_that_judged_a_step_otherwise_than_a_replay_is_replayed(rb) -> None:
    """Found by the generated traces below: live, a context first seen past its opening may not be the
    conversation's first call (a batch came later), so dropping back to it reads as a loss; a replay
    in start order reads it as a reset. Where the live tracker judged so, the diagnosis replays it."""
    config = DetectionConfig()
    a = rb.agent()
    for count in (3, 4, 1):
        rb.llm(a, input_message_count=count)
    run = rb.run()
    live = _fed(run, config)
    assert live.saw(run.steps, config) and [f.mode for f in live._found["history"].values()] == ["FM-1.4"]
    assert live.findings_of("history") is None and live.findings_of("repetition") == []
    assert [f.mode for f in diagnose(run, config, live)] == [f.mode for f in diagnose(run, config)] == ["FM-2.1"]


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


def _named_calls_run(rb, *, exchange: bool = False):
    """A run whose tool calls carry no kind (their names give it) and one answer tool, with a repeated
    call: what hint derivation changes on a run's calls; ``exchange``: a call's result is read from
    the conversation (derived after live detection saw the call, so its work is not reused)."""
    a = rb.agent()
    rb.llm(a, input_message_count=2, requested_tools=("get_pods",))
    for _ in range(3):
        rb.tool(a, "get_pods", {"ns": "web"}, "same", kind=None)
    rb.tool(a, "ask_user", {"q": "which?"}, None if exchange else "web", kind=None, tool_call_id="c1")
    rb.llm(a, input_message_count=3, tool_exchanges={"c1": ("args", "res", "web")} if exchange else {})
    rb.tool(a, "final_answer", {"answer": "done"}, "done", kind=None)
    return rb


def _service_path(run: Run, config: DetectionConfig, hints: HintsConfig, *, on_arrival: bool):
    """Live detection as spans end (with or without ``hints.arrival``), then derivation and the rules
    reusing its work where it covers the run: the findings, whether it was reused, and each span."""
    live = LiveDetection(config, arrival=arrival(hints) if on_arrival else None)
    for span in sorted(run.spans, key=lambda s: s.end_ns):
        live.observe(span)
    derive_hints(run, hints)
    reused = RunContext(run, config, live).live_saw_steps()
    return qualify(diagnose(run, config, live), run), reused, [(s, list((s.derived or {}).items())) for s in run.spans]


def test_calls_judged_on_arrival_as_derivation_judges_them_let_the_diagnosis_reuse_live_work(rb) -> None:
    """Kinds inferred from names and answer tools leaving the steps, done as each call arrives: the
    diagnosis reuses the live trackers' work (it replayed them before) and every finding, kind, kind
    source and derivation note (in its order) is what deriving from scratch gives."""
    config, hints = DetectionConfig(), HintsConfig()
    spans = _named_calls_run(rb).run().spans
    early = _service_path(Run.from_spans(TRACE, copy.deepcopy(spans)), config, hints, on_arrival=True)
    late = _service_path(Run.from_spans(TRACE, copy.deepcopy(spans)), config, hints, on_arrival=False)
    assert early[1] and not late[1]
    derived = _derived(spans, hints)
    assert early[0] == late[0] == qualify(diagnose(derived, config), derived)
    assert early[2] == late[2]
    ask = next(s for s, _ in early[2] if s.tool_name == "ask_user")
    assert (ask.tool_kind, ask.tool_kind_source) == ("clarify", "inferred") and list(ask.derived or {}) == ["tool_kind"]
    assert {f.mode for f in early[0]} >= {"FM-1.3"}

    spans = _named_calls_run(type(rb)(), exchange=True).run().spans  # a result from the conversation
    early = _service_path(Run.from_spans(TRACE, copy.deepcopy(spans)), config, hints, on_arrival=True)
    late = _service_path(Run.from_spans(TRACE, copy.deepcopy(spans)), config, hints, on_arrival=False)
    assert early[0] == late[0] and early[2] == late[2]
    ask = next(s for s, _ in early[2] if s.tool_name == "ask_user")
    assert list(ask.derived or {}) == ["result_hash", "tool_kind"]  # the conversation's note first, as derived


def _derived(spans: list[Span], hints: HintsConfig) -> Run:
    run = Run.from_spans(TRACE, copy.deepcopy(spans))
    return derive_hints(run, hints)


def test_calls_derivation_cannot_judge_on_arrival_are_left_to_it(rb) -> None:
    """A catalog entry scoped to an agent the call does not name (the run's would be read), and an
    answer tool that failed (it stays a step): left as they arrive, and judged as derivation judges."""
    config = DetectionConfig()
    hints = HintsConfig(tools=[ToolRule(name="get_pods", kind="write", agent="sre")])
    a = rb.agent()
    pods = rb.tool(a, "get_pods", {}, "x", kind=None)
    failed = rb.tool(a, "final_answer", {}, None, kind=None, error=True)
    run = rb.run()
    arrive = arrival(hints)
    assert arrive(pods) and pods.tool_kind is None
    assert arrive(failed) and failed.tool_kind is None  # no kind from its name, and it stays
    assert not arrival(HintsConfig())(Span(TRACE, "f", a.span_id, "execute_tool final_answer", 1, 2, role=Role.TOOL,
                                           tool_name="final_answer"))
    named = copy.deepcopy(pods)
    named.agent_name = "sre"  # the call names its agent: the entry is read on arrival
    assert arrive(named) and (named.tool_kind, named.tool_kind_source) == ("write", "catalog")
    early = _service_path(Run.from_spans(TRACE, copy.deepcopy(run.spans)), config, hints, on_arrival=True)
    late = _service_path(Run.from_spans(TRACE, copy.deepcopy(run.spans)), config, hints, on_arrival=False)
    assert early[0] == late[0] and early[2] == late[2]
    assert next(s for s, _ in early[2] if s.tool_name == "get_pods").tool_kind == "write"


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
    """The context built by the per-span walk, whatever the run looks like (the plain path)."""
    return RunContext(run, config, shortcuts=False)


def _same_context(run, config) -> bool:
    fast, walked = RunContext(run, config), _walked(run, config)
    return (fast.keyed_steps == walked.keyed_steps and fast.scopes == walked.scopes
            and all(fast.scope(s) == walked.scope(s) for s in run.spans)
            and all(fast.steps_of(sc) == walked.steps_of(sc) and fast.tool_calls_of(sc) == walked.tool_calls_of(sc)
                    and fast.iterations_of(sc) == walked.iterations_of(sc) for sc in walked.scopes)
            and fast.scope_by_id(None) == walked.scope_by_id(None)
            and fast._keyed_by_parent == walked._keyed_by_parent)


def test_a_lone_agent_run_takes_the_short_path_to_the_context_the_walk_builds(rb) -> None:
    config = DetectionConfig()
    run = _run_with_live_signals(rb)
    assert _lone_agent(run) == {s.span_id: run.root.span_id for s in run.spans}  # every span right below the one agent
    assert _same_context(run, config)
    assert diagnose(run, config, _fed(run, config)) == diagnose(run, config, shortcuts=False)


def test_runs_the_short_path_would_get_wrong_take_the_walk(rb) -> None:
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


# --- every switch's two sides, on generated runs and on every recorded corpus --------------------

def _views(run: Run) -> tuple:
    """Everything a run's views answer, read the way detectors read them."""
    return (run.spans, run.root, run.steps, run.llm_calls, run.tool_calls, run.agent_spans, run.spans_by_id,
            run.agent, run.model, run.hints, [run.agent_of(s) for s in run.spans], build_team(run))


def _pipeline(trace_id: str, spans: list[Span], shortcuts: bool, config: DetectionConfig, *, completion: str = "offline",
              labels: dict | None = None) -> tuple:
    """What the service makes of a trace: live detection as spans end (its work reused only on the
    fast path), hint derivation, the rules, qualification, the diagnosis; with every view asked
    along the way."""
    run = Run.from_spans(trace_id, copy.deepcopy(spans), completion, shortcuts=shortcuts)
    run.labels = dict(labels or {})
    live = None
    before = _views(run)
    if shortcuts:  # as the service feeds it: what derivation decides of a call as it arrives done then
        live = LiveDetection(config, arrival=arrival(HintsConfig()))
        for span in sorted(run.spans, key=lambda s: s.end_ns):
            live.observe(span)
    derive_hints(run)
    context_views = _context_views(RunContext(run, config, shortcuts=shortcuts))
    findings = qualify(diagnose(run, config, live, shortcuts=shortcuts), run)
    return before, context_views, findings, build_diagnosis(run, findings), _views(run)


def _context_views(ctx: RunContext) -> tuple:
    scopes = ctx.scopes
    return (ctx.keyed_steps, scopes, [ctx.scope(s) for s in ctx.run.spans], ctx.scope_by_id(None),
            [(ctx.steps_of(sc), ctx.tool_calls_of(sc), ctx.iterations_of(sc)) for sc in scopes])


def _assert_paths_agree(trace_id: str, spans: list[Span], config: DetectionConfig, **kw) -> list[Finding]:
    fast = _pipeline(trace_id, spans, True, config, **kw)
    plain = _pipeline(trace_id, spans, False, config, **kw)
    for what, a, b in zip(("views", "context", "findings", "diagnosis", "views after"), fast, plain):
        assert a == b, what
    return fast[2]


_IDS = [f"{i:016x}" for i in range(1, 13)]


@st.composite
def _traces(draw) -> list[Span]:
    """A trace as an instrumentation may send it: agents, model and tool calls and other spans under
    any earlier span (or a missing one), start times that tie, step indices, budgets and checks."""
    count = draw(st.integers(1, 12))
    spans = []
    for i in range(count):
        role = Role.AGENT if i == 0 and draw(st.booleans()) else draw(st.sampled_from([Role.AGENT, Role.LLM, Role.LLM, Role.TOOL,
                                                                                        Role.TOOL, Role.TOOL, Role.OTHER]))
        # right below the first span, as most instrumented runs are, or anywhere (a missing parent too)
        parent = (draw(st.just(_IDS[0]) | st.sampled_from([None, "ffffffffffffffff", *_IDS[:i]])) if i
                  else draw(st.sampled_from([None, None, _IDS[1]])))  # (a root whose parent is among the spans)
        span_id = _IDS[i] if not i or draw(st.integers(0, 9)) else draw(st.sampled_from(_IDS[:i]))  # (an id sent twice)
        start = draw(st.integers(1, 6)) * 1000
        kw: dict = {}
        if role is Role.AGENT:
            kw = dict(agent_name=draw(st.sampled_from(["sre", "fixer", "Fixer", None])), hints=RunHints(
                max_steps=draw(st.sampled_from([None, 1, 2])), claimed_success=draw(st.sampled_from([None, True, False])),
                termination_reason=draw(st.sampled_from([None, "final_answer", "max_steps"])),
                ambiguous=draw(st.sampled_from([None, True]))))
        elif role is Role.LLM:
            kw = dict(model=draw(st.sampled_from(["m1", "m2", None])), requested_tools=draw(st.sampled_from([(), ("get_pods",), ("verify",)])),
                      input_message_count=draw(st.integers(1, 9)), output_text=draw(st.sampled_from([None, "done", "I could not do it"])))
        elif role is Role.TOOL:
            name = draw(st.sampled_from(["get_pods", "restart", "verify", "Get_Pods "]))
            kw = dict(tool_name=name, tool_kind=draw(st.sampled_from([None, "read", "write", "verify"])),
                      args_hash=draw(st.sampled_from([None, "a1", "a2"])), result_hash=draw(st.sampled_from([None, "r1", "r2"])),
                      error=draw(st.booleans()), verification_passed=draw(st.sampled_from([None, True, False])),
                      tool_result=draw(st.sampled_from([None, "ok", "Error: refused", "all checks passed"])))
        if role is not Role.AGENT and draw(st.booleans()):
            kw["step_index"] = draw(st.integers(0, 3))
        name = {Role.AGENT: "invoke_agent a", Role.LLM: "chat m", Role.TOOL: f"execute_tool {kw.get('tool_name')}",
                Role.OTHER: "chain"}[role]
        spans.append(Span(TRACE, span_id, parent, name, start, start + draw(st.integers(0, 9000)), role=role, **kw))
    return spans


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_traces(), st.sampled_from([DetectionConfig(), DetectionConfig(disabled_modes=["FM-1.3"])]))
def test_generated_traces_are_judged_alike_with_and_without_the_shortcuts(spans, config) -> None:
    _assert_paths_agree(TRACE, spans, config)


def test_every_recorded_run_is_judged_alike_with_and_without_the_shortcuts() -> None:
    """Every run of every corpus (frameworks, teams, TypeScript, fixtures): the same views, context,
    findings and diagnosis on the fast path (live work reused) and on the plain one."""
    from mast_otel.processors.ingest.files import load_runs
    from tests.corpora import corpus_files

    config = DetectionConfig()
    runs = found = lone = 0
    for path in corpus_files():
        for run in load_runs([path]):
            findings = _assert_paths_agree(run.trace_id, run.spans + run.wrappers, config,
                                           completion=run.completion, labels=run.labels)
            runs, found = runs + 1, found + len(findings)
            lone += _lone_agent(run) is not None
    assert runs > 700 and found > 300 and lone > 50  # both paths of the context were taken, and findings made


def test_live_budget_walk_ends_on_a_span_sent_as_its_own_parent(rb) -> None:
    """Found by the generated traces above: the live budget walk looped forever on a step whose id
    is its agent's and whose parent is that id."""
    a = rb.agent(max_steps=1, sid="a000000000000001")
    rb.llm(a, sid="a000000000000001")  # its own parent
    rb.llm(a), rb.llm(a)
    live = LiveDetection()
    modes = [f.mode for s in sorted(rb.run().spans, key=lambda s: s.end_ns) for f in live.observe(s)]
    assert modes == ["FM-1.5"]


def test_an_agent_asked_before_its_step_was_given_to_another_agent_is_asked_again() -> None:
    """``Run.agent_of`` keeps its answers with the views; a step's parent changing while hint
    derivation gives a team's steps to their agents (``team.adopt_steps``) drops them, so the model
    call made inside that step is read as the adopting agent's, as on the plain path."""
    def spans() -> list[Span]:
        def agent(sid: str, name: str, parent: str | None, start: int, end: int) -> Span:
            return Span(TRACE, sid, parent, f"invoke_agent {name}", start, end, role=Role.AGENT, agent_name=name)
        return [agent("a000000000000001", "lead", None, 0, 1000), agent("a000000000000002", "worker", "a000000000000001", 100, 200),
                # a tool call recorded below the lead that names the worker as its agent, with a model call inside it
                Span(TRACE, "t000000000000001", "a000000000000001", "execute_tool ask", 300, 900, role=Role.TOOL,
                     tool_name="ask", tool_kind="read", agent_name="worker"),
                Span(TRACE, "l000000000000001", "t000000000000001", "chat m1", 400, 500, role=Role.LLM, model="m1"),
                agent("a000000000000003", "helper", "a000000000000001", 350, 600)]  # encloses the call, not the tool

    answers = []
    for shortcuts in (True, False):
        run = Run.from_spans(TRACE, spans(), shortcuts=shortcuts)
        assert [run.agent_of(s).agent_name for s in run.spans if s.role is not Role.AGENT] == ["lead", "lead"]
        derive_hints(run)
        call = next(s for s in run.spans if s.role is Role.LLM)
        answers.append((call.parent_span_id, run.agent_of(call).agent_name))
    assert answers[0] == answers[1] == ("t000000000000001", "worker")
