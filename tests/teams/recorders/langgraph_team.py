"""The LangGraph team both LangGraph team recorders run: ``langgraph_supervisor.create_supervisor``.

The coordinator is the supervisor (``supervisor_name="coordinator"``, ``prompt`` its instructions,
its cluster tools beside the handoff tools ``create_supervisor`` adds: ``transfer_to_operator`` and
``transfer_to_verifier``, without parameters). The workers are ``langchain.agents.create_agent``
graphs named ``operator`` and ``verifier`` (the v1 entry point; the supervisor docs' example uses the
deprecated ``create_react_agent``, which ``create_supervisor`` still uses for the supervisor itself).
A worker reads the shared message history (``output_mode`` default ``last_message``: only its last
message comes back) and hands back to the coordinator on its own, with the
``transfer_back_to_coordinator`` message pair, so the topology is "delegation".

A handoff tool takes no arguments, so the coordinator's instruction to a worker is the text it writes
beside the ``transfer_to_*`` call (``delegate`` returns it as the call's ``say``), which the worker
sees in the shared history.

dropped_context: the LangGraph multi-agent docs' custom handoff tool that sends the worker only a task
description (``Command(goto=[Send(agent, {"messages": [task]})], graph=Command.PARENT)``) instead of
the shared history; with it the handoff tool has a ``task_description`` parameter. LangGraph's ToolNode
forwards such a command without a state update, so the coordinator's own messages of that turn (its pod
and log reads, the handoff call) do not reach the team state either: its next call sees the user task
and the operator's report only.

Team limit: ``config={"recursion_limit": LIMIT}`` on the team graph in the ``limit`` scenario
(GraphRecursionError); every supervisor or worker turn is one superstep of the team graph. The other
scenarios keep LangGraph's default limit, which several of them would exceed at LIMIT.
"""

from tests.teams.harness.scenarios import COORDINATOR, INSTRUCTIONS, LIMIT, OPERATOR, TASK, VERIFIER, tools_of
from tests.frameworks.harness.stub_model import Call

# the scenario being run: dropped_context swaps in the task-description handoff tools, whose call differs
_current = {"scenario": None}
_TASK_HANDOFF = "dropped_context"


def delegate(source: str, target: str, message: str) -> Call:
    """The supervisor's handoff tool call; the instruction is the text the coordinator writes beside it."""
    if _current["scenario"] == _TASK_HANDOFF:
        return Call(f"transfer_to_{target}", {"task_description": message})
    return Call(f"transfer_to_{target}", {}, say=message)


def runner():
    """The ``run(scenario, stub, cluster)`` function for ``record_team`` (imports LangChain once instrumented)."""
    from typing import Annotated

    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.types import Command, Send
    from langgraph_supervisor import create_supervisor
    from langgraph_supervisor.handoff import METADATA_KEY_HANDOFF_DESTINATION

    def task_handoff(agent_name: str):
        """The docs' "control agent inputs" handoff: the worker gets only the task description."""

        @tool(f"transfer_to_{agent_name}", description=f"Ask agent '{agent_name}' for help")
        def handoff(task_description: Annotated[str, "What the agent should do, with all the context it needs."]) -> Command:
            # ToolNode forwards a PARENT command of Sends without any update, so none is given
            return Command(graph=Command.PARENT,
                           goto=[Send(agent_name, {"messages": [HumanMessage(content=task_description)]})])

        handoff.metadata = {METADATA_KEY_HANDOFF_DESTINATION: agent_name}  # how create_supervisor finds custom handoffs
        return handoff

    def run(scenario, stub, cluster):
        _current["scenario"] = scenario.name
        model = ChatOpenAI(base_url=stub.base_url, api_key="x", model="gpt-4o-mini")
        workers = [create_agent(model, tools=tools_of(name, cluster), system_prompt=INSTRUCTIONS[name], name=name)
                   for name in (OPERATOR, VERIFIER)]
        tools = list(tools_of(COORDINATOR, cluster))
        if scenario.name == _TASK_HANDOFF:
            tools += [task_handoff(OPERATOR), task_handoff(VERIFIER)]
        team = create_supervisor(workers, model=model, tools=tools, prompt=INSTRUCTIONS[COORDINATOR],
                                 supervisor_name=COORDINATOR).compile(name="sre-team")
        config = {"recursion_limit": LIMIT} if "limit" in scenario.needs else {}
        team.invoke({"messages": [{"role": "user", "content": TASK}]}, config=config)

    return run

NOTES = ("Team: langgraph_supervisor.create_supervisor([operator, verifier], supervisor_name='coordinator', "
         "prompt=INSTRUCTIONS['coordinator'], tools=coordinator's cluster tools) compiled as 'sre-team'; workers "
         "langchain.agents.create_agent(name=...). Handoff: transfer_to_operator / transfer_to_verifier with {} args, "
         "the instruction as the coordinator's text beside the call; the worker reads the shared history and its last "
         "message comes back (output_mode last_message) followed by a transfer_back_to_coordinator AI/tool message "
         "pair the library adds (no model call). dropped_context: the docs' task-description handoff tools "
         "(transfer_to_<agent>(task_description), Send(agent, {'messages': [task]})), so the operator sees only the "
         "task; ToolNode forwards that Send without a state update, so the coordinator's own pod/log reads and the "
         "handoff call are not in the team state either (its last call sees the task and the operator's report). "
         "The operator's scripted check_health is not among its tools: LangGraph answers 'Error: check_health is "
         "not a valid tool' as the tool message (no cluster call). Limit: config={'recursion_limit': LIMIT} in team_limit only (GraphRecursionError); other scenarios "
         "keep the default limit.")
