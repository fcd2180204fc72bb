"""An agno ``Team`` (3.x, coordinate mode): the coordinator is the team leader, the operator and
the verifier its member agents; shared by the OpenInference and the OpenLLMetry recorders.

The leader's model sees agno's ``delegate_task_to_member(member_id, task)`` tool (``member_id`` the
member's URL-safe name) beside its own cluster tools; a call runs the member agent inside the
tool and returns its answer as the tool result (topology "delegation"). Team limit: the leader's
``tool_call_limit=LIMIT`` (agno then stops offering tools and the leader answers). Cannot express
dropped_context: a member starts from the task it is given, never from the leader's conversation.
"""

import os

from tests.frameworks.harness.stub_model import Call
from tests.teams.harness.recording import record_team
from tests.teams.harness.scenarios import AGENTS, COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, TASK, tools_of

CANNOT = {"dropped_context": "an agno team member starts from the task the leader gives it, never from the "
                             "leader's conversation: there is no transfer whose receiver would keep it"}


def delegate(source: str, target: str, message: str) -> Call:
    """agno's coordinate-mode delegation tool, naming the member and the task."""
    return Call("delegate_task_to_member", {"member_id": target, "task": message})


def record(*, instrumentation: str, packages: list[str], exporter, provider, args, notes: str) -> None:
    os.environ.setdefault("AGNO_TELEMETRY", "false")

    from agno.agent import Agent
    from agno.models.openai import OpenAIChat
    from agno.team import Team

    def run(scenario, stub, cluster):
        def model():
            return OpenAIChat(id="gpt-4o-mini", base_url=stub.base_url, api_key="sk-stub")

        members = [Agent(name=name, role=DESCRIPTIONS[name], instructions=INSTRUCTIONS[name], model=model(),
                         tools=tools_of(name, cluster)) for name in AGENTS if name != COORDINATOR]
        team = Team(name=COORDINATOR, members=members, model=model(), instructions=INSTRUCTIONS[COORDINATOR],
                    tools=tools_of(COORDINATOR, cluster), description=DESCRIPTIONS[COORDINATOR],
                    tool_call_limit=LIMIT if "limit" in scenario.needs else None)
        result = team.run(TASK)
        return result.content

    record_team(framework="agno", instrumentation=instrumentation, packages=["agno", *packages], run=run,
                delegate=delegate, topology="delegation", exporter=exporter, provider=provider, args=args,
                cannot=CANNOT, notes=notes)
