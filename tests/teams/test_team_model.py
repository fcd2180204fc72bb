"""The team model on hand-built spans: handoffs as edges, steps reaching their agents, stand-in agents."""

from __future__ import annotations

from mast_otel.processors.hints import derive_hints
from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.model import Role, Run, Span
from mast_otel.processors.team import build_team, same_action, target_in_arguments, target_in_name

T = "ab" * 16


def span(sid: int, parent: int | None, name: str, start: int, end: int, role: Role = Role.OTHER, **fields) -> Span:
    return Span(T, f"{sid:016x}", f"{parent:016x}" if parent is not None else None, name, start, end, role=role, **fields)


def test_a_handoff_matches_the_same_handoff_under_another_spelling_and_no_other():
    assert same_action("handoff to operator", ("transfer_to_operator",))
    assert same_action("Delegate work to coworker", ("delegate_work_to_coworker",))
    assert same_action("transfer_to_agent", ("transfer_to_agent",))
    assert not same_action("handoff to verifier", ("transfer_to_operator",))
    assert not same_action("restart_deployment", ("transfer_to_operator",))
    assert target_in_name("transfer_to_operator") == "operator" and target_in_name("transfer_to_agent") is None
    assert target_in_arguments('{"agent_name": "verifier", "message": "check"}') == "verifier"


def _team(with_links: bool) -> Run:
    """A workflow wrapping two agent turns, each with a 'turn' span (not kept) between the agent and its steps."""
    spans = [
        span(1, None, "Agent workflow", 0, 100, Role.AGENT, agent_name="Agent workflow"),
        span(2, 1, "coordinator", 1, 30, Role.AGENT, agent_name="coordinator"),
        span(4, 3, "generation", 3, 10, Role.LLM, requested_tools=("transfer_to_operator",), input_message_count=2),
        span(5, 3, "handoff to operator", 11, 12, Role.TOOL, tool_name="handoff to operator"),
        span(6, 1, "operator", 31, 90, Role.AGENT, agent_name="operator"),
        span(8, 7, "generation", 33, 40, Role.LLM, requested_tools=("restart_deployment",), input_message_count=4),
        span(9, 7, "restart_deployment", 41, 50, Role.TOOL, tool_name="restart_deployment"),
    ]
    links = {f"{3:016x}": f"{2:016x}", f"{7:016x}": f"{6:016x}"} if with_links else None
    return Run.from_spans(T, spans, links=links)


def test_steps_reach_their_agent_through_spans_that_are_not_kept():
    run = _team(with_links=True)
    assert [run.agent_of(s).agent_name for s in run.steps] == ["coordinator", "coordinator", "operator", "operator"]
    assert run.agent == "coordinator"  # the workflow owns no step: the team is named after its entry agent
    assert _team(with_links=False).agent_of(_team(with_links=False).steps[0]) is None  # what it was before


def test_a_handoff_is_an_edge_not_a_mismatch():
    run = derive_hints(_team(with_links=True))
    team = build_team(run)
    assert team.agents == ("coordinator", "operator")
    assert [(h.source, h.target, h.kind) for h in team.handoffs] == [("coordinator", "operator", "transfer")]
    assert "FM-2.6" not in {f.mode for f in rule_findings(_team(with_links=True))}


def _crew() -> list[Span]:
    return [
        span(1, None, "coordinator._execute_core", 0, 100, Role.AGENT, agent_name="coordinator"),
        span(2, 1, "ChatCompletion", 1, 5, Role.LLM, requested_tools=("delegate_work_to_coworker",), input_message_count=2),
        span(3, 1, "Delegate work to coworker.run", 6, 60, Role.TOOL, tool_name="Delegate work to coworker",
             tool_args='{"task": "fix checkout", "coworker": "operator"}'),
        span(4, 3, "ChatCompletion", 7, 20, Role.LLM, requested_tools=("restart_deployment",), input_message_count=2),
        span(5, 3, "restart_deployment.run", 21, 30, Role.TOOL, tool_name="restart_deployment"),
        span(6, 1, "ChatCompletion", 61, 70, Role.LLM, input_message_count=4),
    ]


def test_a_delegation_tool_running_a_worker_inside_it_gets_an_agent_standing_in_for_the_worker():
    run = derive_hints(Run.from_spans(T, _crew()))
    worker = [s for s in run.agent_spans if s.agent_name == "operator"]
    assert len(worker) == 1 and worker[0].derived  # says it was derived
    assert [run.agent_of(s).agent_name for s in run.steps] == ["coordinator", "coordinator", "operator", "operator",
                                                              "coordinator"]
    # the worker's fresh conversation is its own, not the coordinator's lost history
    assert not {"FM-1.4", "FM-2.1"} & {f.mode for f in rule_findings(Run.from_spans(T, _crew()))}
