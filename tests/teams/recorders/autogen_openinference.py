"""AutoGen AgentChat (0.7) ``Swarm`` through OpenInference (openinference-instrumentation-autogen-agentchat).

The same team as ``autogen`` (coordinator, operator, verifier passing control with argument-less
``transfer_to_<agent>`` handoffs; ``TextMessageTermination(source="coordinator")``), so the two
instrumentations can be compared on one team. Tracing: ``AutogenAgentChatInstrumentor().instrument(
tracer_provider=...)``, whose spans are the team's ``run_stream``, each agent's ``on_messages_stream``,
its tool executions and the model client's ``create`` calls. The provider is not made global, so
autogen-core's own GenAI and runtime spans (which use the global one) stay out: this recording is
OpenInference's view alone. Team limit: ``Swarm(max_turns=LIMIT)`` (the run just stops).
dropped_context: ``BufferedChatCompletionContext(buffer_size=1)`` on the operator. Content off:
``OPENINFERENCE_HIDE_INPUTS`` / ``OPENINFERENCE_HIDE_OUTPUTS``.
"""

import asyncio
import os

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.frameworks.harness.recording import SERVICE
from tests.frameworks.harness.stub_model import Call
from tests.teams.harness.recording import arguments, record_team
from tests.teams.harness.scenarios import AGENTS, COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, OPERATOR, TASK, tools_of

HANDOFFS = {COORDINATOR: [a for a in AGENTS if a != COORDINATOR]}


def delegate(source: str, target: str, message: str) -> Call:
    """A Swarm handoff is an argument-less ``transfer_to_<target>`` tool; the message is the text beside it."""
    return Call(f"transfer_to_{target}", {}, say=message)


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor

    AutogenAgentChatInstrumentor().instrument(tracer_provider=provider)

    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import TextMessageTermination
    from autogen_agentchat.teams import Swarm
    from autogen_core.model_context import BufferedChatCompletionContext
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    def run(scenario, stub, cluster):
        client = OpenAIChatCompletionClient(
            model="gpt-4o-mini", base_url=stub.base_url, api_key="x", parallel_tool_calls=False,
            model_info={"vision": False, "function_calling": True, "json_output": True,
                        "family": "gpt-4o", "structured_output": True},
        )

        async def go():
            agents = [
                AssistantAgent(
                    name, model_client=client, tools=tools_of(name, cluster), description=DESCRIPTIONS[name],
                    system_message=INSTRUCTIONS[name], handoffs=HANDOFFS.get(name, [COORDINATOR]),
                    model_context=(BufferedChatCompletionContext(buffer_size=1)
                                   if name == OPERATOR and "transfer" in scenario.needs else None),
                )
                for name in AGENTS
            ]
            team = Swarm(agents, termination_condition=TextMessageTermination(source=COORDINATOR),
                         max_turns=LIMIT if "limit" in scenario.needs else None)
            try:
                return await team.run(task=TASK)
            finally:
                await client.close()

        return asyncio.run(go())

    record_team(
        framework="autogen", topology="transfer", delegate=delegate, exporter=exporter, provider=provider,
        instrumentation="openinference-instrumentation-autogen-agentchat (AutogenAgentChatInstrumentor)",
        packages=["autogen-agentchat", "autogen-core", "autogen-ext", "openinference-instrumentation-autogen-agentchat",
                  "openai", "opentelemetry-sdk"],
        run=run, args=args, notes="see the module docstring of tests/teams/recorders/autogen_openinference.py",
    )


if __name__ == "__main__":
    main()
