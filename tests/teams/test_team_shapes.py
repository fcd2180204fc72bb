"""Each instrumentation's team shape read as one team: the span fields one span gives, and the
team a few hand-built spans make (the recorded corpus covers the same shapes end to end)."""

from __future__ import annotations

from mast_otel.processors.hints import derive_hints
from mast_otel.processors.ingest.normalize import normalize
from mast_otel.processors.model import Role, Run, RunHints, Span
from mast_otel.processors.team import build_team

T = "cd" * 16


def span(sid: int, parent: int | None, name: str, start: int, end: int, role: Role = Role.OTHER, **fields) -> Span:
    return Span(T, f"{sid:016x}", f"{parent:016x}" if parent is not None else None, name, start, end, role=role, **fields)


def test_an_openllmetry_handoff_span_is_a_handoff_call_naming_its_target_when_known():
    unknown = normalize("coordinator → unknown.handoff", {"traceloop.span.kind": "handoff", "gen_ai.operation.name":
                                                            "handoff", "gen_ai.handoff.from_agent": "coordinator"})
    known = normalize("coordinator → operator.handoff", {"traceloop.span.kind": "handoff"})
    assert unknown is not None and unknown["role"] is Role.TOOL and unknown["tool_name"] == "handoff"
    assert known is not None and known["tool_name"] == "handoff to operator"


def test_agent_names_lose_the_span_names_suffixes():
    def agent(name: str, **attrs) -> str | None:
        fields = normalize(name, {"openinference.span.kind": "AGENT", **attrs})
        return fields["agent_name"] if fields else None

    assert agent("operator.on_messages_stream", **{"graph.node.id": "operator"}) == "operator"
    assert agent("operator.on_messages_stream") == "operator"
    assert agent("invoke_agent agent") == "agent"
    assert agent("Researcher.Research the market trends", **{"graph.node.id": "Researcher"}) == "Researcher"
    openllmetry = normalize("operator.agent", {"traceloop.span.kind": "agent", "gen_ai.agent.name": "operator"})
    assert openllmetry is not None and openllmetry["agent_name"] == "operator"


def test_an_agno_team_span_is_its_leader_and_a_failed_tool_result_is_a_failure():
    leader = normalize("coordinator.team", {"traceloop.span.kind": "workflow", "agno.team.name": "coordinator"})
    assert leader is not None and leader["role"] is Role.AGENT and leader["agent_name"] == "coordinator"
    assert not leader.get("workflow")
    ok = normalize("check_health.tool", {"traceloop.span.kind": "tool", "traceloop.entity.output":
                   "status='success' result={'healthy': True} error=None updated_session_state=None images=None"})
    failed = normalize("restart.tool", {"traceloop.span.kind": "tool", "traceloop.entity.output":
                       "status='failure' result=None error=refused updated_session_state=None images=None"})
    assert ok is not None and not ok.get("error") and ok["tool_result"] == "{'healthy': True}"
    assert failed is not None and failed.get("error")


def _agno_team() -> Run:
    """A leader whose delegation tool is followed by the member's agent span as its sibling (agno)."""
    return Run.from_spans(T, [
        span(1, None, "coordinator.team", 0, 100, Role.AGENT, agent_name="coordinator"),
        span(2, 1, "openai.chat", 1, 5, Role.LLM, requested_tools=("delegate_task_to_member",)),
        span(3, 1, "delegate_task_to_member.tool", 6, 6, Role.TOOL, tool_name="delegate_task_to_member",
             tool_args='{"member_id": "operator", "task": "fix checkout"}'),
        span(4, 1, "operator.agent", 7, 50, Role.AGENT, agent_name="operator"),
        span(5, 4, "openai.chat", 8, 10, Role.LLM, requested_tools=("restart_deployment",)),
        span(6, 4, "restart_deployment.tool", 11, 12, Role.TOOL, tool_name="restart_deployment"),
        span(7, 1, "openai.chat", 51, 60, Role.LLM),
    ])


def test_a_member_run_beside_the_delegation_tool_is_one_delegation_and_owns_its_tools():
    run = derive_hints(_agno_team())
    team = build_team(run)
    assert team.agents == ("coordinator", "operator")
    assert [(h.source, h.target, h.kind) for h in team.handoffs] == [("coordinator", "operator", "delegation")]
    assert run.agent_of(run.spans_by_id[f"{6:016x}"]).agent_name == "operator"


def test_a_coworker_asked_a_question_inside_the_tool_is_an_agent_of_its_own():
    run = derive_hints(Run.from_spans(T, [
        span(1, None, "Crew Manager._execute_core", 0, 100, Role.AGENT, agent_name="Crew Manager"),
        span(2, 1, "ChatCompletion", 1, 5, Role.LLM, requested_tools=("ask_question_to_coworker",)),
        span(3, 1, "Ask question to coworker.run", 6, 60, Role.TOOL, tool_name="Ask question to coworker",
             tool_args='{"question": "what is new?", "context": "AI", "coworker": "Researcher"}'),
        span(4, 3, "ChatCompletion", 7, 20, Role.LLM),
        span(5, 1, "ChatCompletion", 61, 70, Role.LLM),
    ]))
    team = build_team(run)
    assert team.agents == ("Crew Manager", "Researcher")
    assert [(h.source, h.target) for h in team.handoffs] == [("Crew Manager", "Researcher")]


def _gave_up_in_turn() -> Run:
    """The operator gives up on its task; the coordinator passes that on and ends the run."""
    return Run.from_spans(T, [
        span(1, None, "coordinator", 0, 100, Role.AGENT, agent_name="coordinator", hints=RunHints(claimed_success=False)),
        span(2, 1, "chat", 1, 5, Role.LLM, requested_tools=("transfer_to_operator",)),
        span(3, 1, "transfer_to_operator", 6, 7, Role.TOOL, tool_name="transfer_to_operator"),
        span(4, 1, "operator", 8, 60, Role.AGENT, agent_name="operator"),
        span(5, 4, "chat", 9, 10, Role.LLM, requested_tools=("get_pods",)),
        span(6, 4, "get_pods", 11, 12, Role.TOOL, tool_name="get_pods", tool_result='{"pods": []}'),
        span(7, 4, "chat", 13, 20, Role.LLM, output_text="I could not find the checkout pods, so I stopped."),
        span(8, 1, "chat", 61, 70, Role.LLM, output_text="We could not fix checkout: the operator found no pods."),
    ])


def test_a_give_up_is_the_first_agent_that_gave_up_with_the_agent_that_ended_the_run_beside_it():
    from mast_otel.processors.attribution import attribute
    from mast_otel.processors.model import Finding

    run = _gave_up_in_turn()
    who = attribute(run, [Finding("FM-3.1", 0.7, "gave up", (f"{8:016x}",))])
    assert who is not None and who.agent == "operator" and who.step_span_id == f"{7:016x}"
    assert who.ended_by == "coordinator" and who.as_dict()["ended_by"] == "coordinator"
    assert type(who).from_dict(who.as_dict()) == who


def test_a_llamaindex_handoff_names_its_target_in_the_to_agent_argument():
    """AgentWorkflow's ``handoff(to_agent, reason)`` tool through OpenLLMetry: the target is only in the
    arguments, which OpenLLMetry writes even with content capture off."""
    from mast_otel.processors.team import target_in_arguments

    assert target_in_arguments('{"to_agent": "operator", "reason": "fix checkout"}') == "operator"


def test_members_run_beside_their_delegations_are_found_alike_with_and_without_the_shortcut():
    """``build_team`` on the shortcuts path groups agent spans and steps by their agent once per run
    (``_Beside``); the plain path asks each agent span and step again per handoff: the same team on
    every recorded team run, handoffs and all."""
    import copy

    from mast_otel.processors.hints import derive_hints
    from mast_otel.processors.ingest.files import load_runs
    from mast_otel.processors.model import Run
    from mast_otel.processors.team import build_team
    from tests.corpora import corpus_files

    compared = beside = 0
    for path in corpus_files():
        for run in load_runs([path]):
            if len(run.agent_spans) < 2:
                continue
            teams = []
            for shortcuts in (True, False):
                copied = Run.from_spans(run.trace_id, copy.deepcopy(run.spans + run.wrappers), run.completion,
                                        shortcuts=shortcuts)
                derive_hints(copied)
                teams.append(build_team(copied))
            assert teams[0] == teams[1], run.trace_id
            compared += 1
            beside += any(h.kind == "delegation" for h in teams[0].handoffs)
    assert compared > 100 and beside > 10
