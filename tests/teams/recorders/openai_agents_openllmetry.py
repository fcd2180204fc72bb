"""OpenAI Agents SDK team with handoffs, traced through OpenLLMetry (opentelemetry-instrumentation-openai-agents).

The same team as ``openai_agents_handoffs`` (coordinator, operator, verifier; ``Agent(handoffs=[...])``,
argument-less ``transfer_to_<name>`` calls with the message as the text beside them), so the two
instrumentations can be compared on one team. Tracing: the SDK's default OpenAI trace uploader is
removed (``set_trace_processors([])``: nothing leaves the machine), then
``OpenAIAgentsInstrumentor().instrument(tracer_provider=...)`` adds OpenLLMetry's trace processor.
Team limit: ``Runner.run_sync(max_turns=LIMIT)`` raises ``MaxTurnsExceeded``. dropped_context:
``handoff(operator, input_filter=drop_history)``. Content off: ``TRACELOOP_TRACE_CONTENT=false``.
"""

import os

from tests.frameworks.harness.stub_model import Call
from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.harness.scenarios import AGENTS, COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, OPERATOR, TASK, VERIFIER, tools_of

ROOMY = 40  # max_turns for scenarios that do not test the limit (the longest script has 17 model calls)


def delegate(source: str, target: str, message: str) -> Call:
    """A handoff is the SDK's ``transfer_to_<agent>`` tool with no arguments; the message rides as text."""
    return Call(f"transfer_to_{target}", {}, say=message)


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
    provider, exporter = tracer_provider()

    from agents import set_trace_processors

    set_trace_processors([])  # no upload to OpenAI's trace service

    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, handoff
    from agents.handoffs import HandoffInputData
    from openai import AsyncOpenAI

    def drop_history(data: HandoffInputData) -> HandoffInputData:
        """The operator gets the user's task only: none of the coordinator's reads, nor its handoff turn."""
        return data.clone(pre_handoff_items=(), new_items=())

    def run(scenario, stub, cluster):
        client = AsyncOpenAI(base_url=stub.base_url, api_key="sk-stub")
        model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
        agents = {name: Agent(name=name, instructions=INSTRUCTIONS[name], handoff_description=DESCRIPTIONS[name],
                              model=model, tools=[function_tool(t) for t in tools_of(name, cluster)])
                  for name in AGENTS}
        to_operator = (handoff(agents[OPERATOR], input_filter=drop_history)
                       if "transfer" in scenario.needs else agents[OPERATOR])
        agents[COORDINATOR].handoffs = [to_operator, agents[VERIFIER]]
        agents[OPERATOR].handoffs = [agents[COORDINATOR]]
        agents[VERIFIER].handoffs = [agents[COORDINATOR]]
        turns = LIMIT if "limit" in scenario.needs else ROOMY
        result = Runner.run_sync(agents[COORDINATOR], TASK, max_turns=turns)
        return result.final_output

    record_team(
        framework="openai-agents",
        instrumentation="opentelemetry-instrumentation-openai-agents (OpenLLMetry)",
        packages=["openai-agents", "opentelemetry-instrumentation-openai-agents", "openai", "opentelemetry-sdk"],
        run=run, delegate=delegate, topology="transfer", exporter=exporter, provider=provider, args=args,
        notes=NOTES,
    )


NOTES = "see the module docstring of tests/teams/recorders/openai_agents_openllmetry.py"

if __name__ == "__main__":
    main()
