"""FM-1.5 counted in the unit each framework counts (``step_units``), on runs built here.

A framework's own step spans (a ``Step N``, a graph node) are not kept: they reach the run as
parent links only, and each step inside one is re-linked to its agent with that span noted
(``Span.unit_span_id``). The runs below are built that way.
"""

from __future__ import annotations

import itertools

import pytest

from mast_otel.processors.detectors import LiveDetection, rule_findings, step_units
from mast_otel.processors.detectors.settings import DetectionConfig, TerminationConfig
from mast_otel.processors.frameworks import registry
from mast_otel.processors.model import AGENT, LLM, TOOL, Role, Run, RunHints, Span

TRACE = "cd" * 16
UNAWARE = "FM-1.5"


class Built:
    """Spans in start order with readable ids, plus the parent links of the spans not kept."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.links: dict[str, str | None] = {}
        self._clock = itertools.count(1)
        self._ids = itertools.count(1)

    def _id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):015d}"

    def agent(self, name: str, parent: str | None = None, **hints: object) -> Span:
        t = next(self._clock) * 1000
        span = Span(TRACE, self._id("a"), parent, f"{name}.run", t, t, role=AGENT, agent_name=name,
                    hints=RunHints(**hints))  # type: ignore[arg-type]
        self.spans.append(span)
        return span

    def wrapper(self, parent: Span | str) -> str:
        """A framework span of its own (not kept): only its parent link arrives."""
        sid = self._id("w")
        self.links[sid] = parent if isinstance(parent, str) else parent.span_id
        return sid

    def step(self, role: Role, parent: Span | str, **kw: object) -> Span:
        t = next(self._clock) * 1000
        parent_id = parent if isinstance(parent, str) else parent.span_id
        name = f"execute_tool {kw.get('tool_name')}" if role is TOOL else "chat m1"
        span = Span(TRACE, self._id(role.value[:1]), parent_id, name, t, t + 500, role=role, **kw)  # type: ignore[arg-type]
        self.spans.append(span)
        return span

    def unit(self, agent: Span, *, tool: bool = True) -> Span:
        """One unit inside a wrapper span: a model call and the tool call it asked for."""
        wrapper = self.wrapper(agent)
        call = self.step(LLM, wrapper, requested_tools=("search",) if tool else ())
        if tool:
            self.step(TOOL, wrapper, tool_name="search", tool_kind="read")
        return call

    def close(self, agent: Span) -> None:
        """The agent span ends now, after its steps."""
        agent.end_ns = next(self._clock) * 1000

    def run(self) -> Run:
        end = max(s.end_ns for s in self.spans) + 1
        for span in reversed(self.spans):  # agent spans still open end after every step, an outer one last
            if span.role is AGENT and span.end_ns == span.start_ns:
                span.end_ns = end
                end += 1
        return Run.from_spans(TRACE, list(self.spans), completion="root_ended", links=dict(self.links))


def unaware(run: Run, config: DetectionConfig | None = None) -> list:
    return [f for f in rule_findings(run, config) if f.mode == UNAWARE] if config else \
        [f for f in rule_findings(run) if f.mode == UNAWARE]


def own_steps_agent(b: Built, name: str = "search_agent", budget: int = 3, parent: str | None = None) -> Span:
    return b.agent(name, parent, max_steps=budget, budget_framework="smolagents")


def test_action_steps_that_reach_the_budget_are_fm15_on_the_step_that_reached_it():
    b = Built()
    agent = own_steps_agent(b)
    b.step(LLM, agent)  # a planning call, in no step
    calls = [b.unit(agent) for _ in range(3)]
    b.step(LLM, agent)  # the answer asked for once the budget was spent, in no step
    [f] = unaware(b.run())
    assert "agent 'search_agent' used 3 of 3 action steps, as smolagents counts them (its max_steps)" in f.explanation
    assert f.span_id == calls[2].span_id and calls[2].span_id in f.evidence_span_ids


def test_planning_calls_and_a_tools_own_model_call_are_no_action_step():
    """Counted in iterations, the planning calls would pass the budget; in action steps they are none."""
    b = Built()
    agent = own_steps_agent(b)
    for _ in range(6):
        b.step(LLM, agent)
    b.unit(agent)
    wrapper = b.wrapper(agent)
    b.step(LLM, wrapper, requested_tools=("inspect",))
    tool = b.step(TOOL, wrapper, tool_name="inspect", tool_kind="read")
    b.step(LLM, tool)  # the tool's own model call
    assert unaware(b.run()) == []


def test_each_run_of_a_managed_agent_has_its_own_budget():
    """The manager runs the same agent twice, two action steps each: 4 in all, 2 per run, budget 3."""
    b = Built()
    manager = b.agent("manager", max_steps=12, budget_framework="smolagents")
    for _ in range(2):
        manager_step = b.wrapper(manager)
        b.step(LLM, manager_step)
        worker = own_steps_agent(b, "search_agent", parent=manager_step)
        for _ in range(2):
            b.unit(worker)
        b.close(worker)
    assert unaware(b.run()) == []


def test_the_run_that_reached_its_budget_is_named_not_its_other_runs():
    b = Built()
    manager = b.agent("manager", max_steps=12, budget_framework="smolagents")
    reached = None
    for steps in (1, 3):
        manager_step = b.wrapper(manager)
        b.step(LLM, manager_step)
        worker = b.agent("search_agent", manager_step, max_steps=3, budget_framework="smolagents")
        calls = [b.unit(worker) for _ in range(steps)]
        b.close(worker)
        reached = worker if steps == 3 else reached
    [f] = unaware(b.run())
    assert f.span_id == calls[-1].span_id and reached is not None and reached.span_id in f.evidence_span_ids


def test_units_survive_a_run_read_again_and_step_spans_that_arrive_late():
    """A trace is assembled again as spans arrive: steps whose step spans came later, or that were
    re-linked already, keep their units."""
    b = Built()
    agent = own_steps_agent(b)
    for _ in range(3):
        b.unit(agent)
    b.close(agent)
    early = Run.from_spans(TRACE, list(b.spans), links={})  # no step span arrived yet: no step is the agent's
    assert not any("action steps" in f.explanation for f in unaware(early))
    for _ in range(2):  # then every step span is in; the second time the steps were re-linked already
        [f] = unaware(Run.from_spans(TRACE, list(b.spans), links=dict(b.links)))
        assert "used 3 of 3 action steps" in f.explanation


def test_live_leaves_a_framework_budget_to_the_diagnosis():
    """Live never sees the framework's step spans: it raises nothing, in raw or re-linked form."""
    b = Built()
    agent = own_steps_agent(b, budget=2)
    for _ in range(5):
        b.step(LLM, agent)  # five planning calls: over the budget counted in iterations
    for _ in range(2):
        b.unit(agent)
    raw = sorted(b.spans, key=lambda s: s.end_ns)
    live = LiveDetection()
    assert [f for s in raw for f in live.observe(s) if f.mode == UNAWARE] == []
    run = b.run()
    live = LiveDetection()
    assert [f for s in sorted(run.spans, key=lambda s: s.end_ns) for f in live.observe(s) if f.mode == UNAWARE] == []
    assert len(unaware(run)) == 1  # the diagnosis finds it


def test_limit_words_on_an_agent_whose_steps_did_not_reach_its_budget_are_not_its_limit():
    b = Built()
    agent = b.agent("search_agent", max_steps=20, budget_framework="smolagents",
                    final_answer="I was asked this but it got stuck and failed to do so; here is what I found.")
    for _ in range(2):
        b.unit(agent)
    assert unaware(b.run()) == []


def test_mast_otel_own_budget_wins_over_a_frameworks_and_is_counted_in_iterations():
    from mast_otel.processors.ingest.normalize.mast import run_hints
    from mast_otel.wire import attributes as A

    hints = run_hints({A.MAST_TASK_MAX_STEPS: 5}, RunHints(max_steps=20, budget_framework="smolagents"), 100)
    assert (hints.max_steps, hints.budget_framework) == (5, None)


def test_mast_otel_own_budget_keeps_counting_iterations():
    b = Built()
    agent = b.agent("triage", max_steps=2)
    calls = [b.step(LLM, agent, requested_tools=("get",)) for _ in range(3)]
    [f] = unaware(b.run())
    assert "agent 'triage' took 3 steps against a budget of 2" in f.explanation and f.span_id == calls[2].span_id


def test_a_run_wide_default_is_said_to_be_assumed_and_rated_lower():
    b = Built()
    agent = b.agent("triage")
    for _ in range(3):
        b.step(LLM, agent)
    [f] = unaware(b.run(), DetectionConfig(termination=TerminationConfig(default_max_steps=2)))
    assert "over the run-wide limit of 2 assumed from termination.default_max_steps" in f.explanation
    assert f.confidence <= 0.6


# (framework, its limit error, how its units show, expected words)
STATED = [
    ("langgraph", "GraphRecursionError('Recursion limit of 4 reached without hitting a stop condition.')", "own_span",
     "used 4 of 4 super-steps, as LangGraph counts them: its recursion_limit"),
    ("openai_agents", "Max turns exceeded: {'max_turns': 3}", "model_call",
     "used 3 of 3 model turns, as OpenAI Agents counts them: its max_turns"),
    ("pydantic_ai", "UsageLimitExceeded: The next request would exceed the request_limit of 3", "model_call",
     "used 3 of 3 model requests, as Pydantic AI counts them: its request_limit"),
    ("pydantic_ai", "UsageLimitExceeded: The next tool call would exceed the tool_calls_limit of 3", "tool_call",
     "used 3 of 3 tool calls, as Pydantic AI counts them: its tool_calls_limit"),
    ("google_adk", "LlmCallsLimitExceededError: Max number of llm calls limit of `3` exceeded", "model_call",
     "used 3 of 3 model calls, as Google ADK counts them: its max_llm_calls"),
    ("llamaindex", "WorkflowRuntimeError: Max iterations of 3 reached! Either something went wrong", "model_call",
     "used 3 of 3 iterations, as LlamaIndex counts them: its max_iterations"),
]


@pytest.mark.parametrize("family, error, shape, words", STATED, ids=[f"{s[0]}-{s[2]}" for s in STATED])
def test_a_limit_error_that_names_the_budget_is_told_with_the_units_the_spans_show(family, error, shape, words):
    assert family in {name for name, _ in registry().step_budgets}
    b = Built()
    agent = b.agent("sre")
    agent.error, agent.status_message = True, error
    for _ in range(2 if shape == "own_span" else 3):
        if shape == "own_span":  # a node span per super-step: the model node, then the tools node
            b.step(LLM, b.wrapper(agent), requested_tools=("get",))
            b.step(TOOL, b.wrapper(agent), tool_name="get", tool_kind="read")
        else:
            b.step(LLM, agent, requested_tools=("get",))
            b.step(TOOL, agent, tool_name="get", tool_kind="read")
    [f] = unaware(b.run())
    assert "was stopped by max steps" in f.explanation and words in f.explanation


def test_a_count_that_is_not_the_stated_budget_is_not_told():
    """The framework stops right at its budget: spans showing another count do not hold its units one for one."""
    b = Built()
    agent = b.agent("sre")
    agent.error, agent.status_message = True, "Recursion limit of 4 reached without hitting a stop condition."
    b.step(LLM, b.wrapper(agent), requested_tools=("get",))
    [f] = unaware(b.run())
    assert "(its recursion_limit of 4 super-steps, as LangGraph counts them)" in f.explanation and "used" not in f.explanation


DECLARED = registry().step_budgets


@pytest.mark.parametrize("family, declared", DECLARED, ids=[f"{f}-{b.setting}" for f, b in DECLARED])
def test_each_framework_counts_its_own_unit(family, declared):
    """Three units in the framework's shape, with what is no unit of it around them: a call right
    below the agent (own-span units), a tool's own model call (model calls), a model call (tool calls)."""
    b = Built()
    agent = b.agent("sre")
    b.step(LLM, agent)  # below the agent, in no span of the framework's own
    for _ in range(3):
        parent: Span | str = b.wrapper(agent) if declared.count == "own_span" else agent
        b.step(LLM, parent, requested_tools=("inspect",))
        tool = b.step(TOOL, parent, tool_name="inspect", tool_kind="read")
        b.step(LLM, tool)  # the tool's own model call
    run = b.run()
    counted = step_units.units(run.steps, declared)
    expected = {"own_span": 3, "model_call": 4, "tool_call": 3}[declared.count]
    assert len(counted) == expected, (family, declared.unit)


def test_every_declared_budget_is_well_formed():
    import re

    declared = registry().step_budgets
    assert {"smolagents", "openai_agents", "langgraph", "crewai", "pydantic_ai", "llamaindex", "google_adk", "agno",
            "strands"} <= {name for name, _ in declared}
    for name, budget in declared:
        assert budget.count in ("own_span", "model_call", "tool_call") and budget.unit and budget.setting, name
        if budget.stated:
            assert re.compile(budget.stated).groups >= 1, name
    # only a budget stated on the agent span is compared with a count (a default is never assumed for one)
    assert {name for name, b in declared if b.keys} == {"smolagents"}
