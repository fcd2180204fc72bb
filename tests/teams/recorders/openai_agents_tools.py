"""OpenAI Agents SDK team with agents as tools, traced through OpenInference (openinference-instrumentation-openai-agents).

Tracing: ``OpenAIAgentsInstrumentor().instrument(tracer_provider=...)`` as its README shows (the
exclusive processor: nothing is uploaded to OpenAI). Primitive: ``operator.as_tool(tool_name=
"operator", tool_description=...)`` and the same for the verifier, on the coordinator: the model
calls the tool ``operator`` with ``{"input": message}``, the SDK runs the operator in a nested
``Runner.run`` (same trace) and its final output comes back as the tool result. Topology:
delegation. Team limit: ``Runner.run_sync(coordinator, max_turns=LIMIT)`` counts the
coordinator's turns only; each nested agent run has its own ``max_turns`` (``as_tool``'s
``max_turns`` argument, default ``DEFAULT_MAX_TURNS`` = 10), which no script reaches. Content off:
``OPENINFERENCE_HIDE_INPUTS`` / ``OPENINFERENCE_HIDE_OUTPUTS``. Cannot express dropped_context:
an agent tool always starts from the input it is given, never from the caller's conversation.
"""

import os

from tests.frameworks.harness.stub_model import Call
from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.harness.scenarios import AGENTS, COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, OPERATOR, TASK, VERIFIER, tools_of

ROOMY = 40  # max_turns for scenarios that do not test the limit (no coordinator script comes near it)


def delegate(source: str, target: str, message: str) -> Call:
    """An agent tool takes one string parameter, ``input`` (the SDK's AgentAsToolInput)."""
    return Call(target, {"input": message})


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()

    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from agents.tracing import get_trace_provider
    from openai import AsyncOpenAI

    processors = get_trace_provider()._multi_processor._processors  # only OpenInference's, no OpenAI upload
    assert [type(p).__name__ for p in processors] == ["OpenInferenceTracingProcessor"], processors

    def run(scenario, stub, cluster):
        client = AsyncOpenAI(base_url=stub.base_url, api_key="sk-stub")
        model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
        agents = {name: Agent(name=name, instructions=INSTRUCTIONS[name], model=model,
                              tools=[function_tool(t) for t in tools_of(name, cluster)])
                  for name in AGENTS}
        for worker in (OPERATOR, VERIFIER):
            agents[COORDINATOR].tools.append(agents[worker].as_tool(tool_name=worker, tool_description=DESCRIPTIONS[worker]))
        turns = LIMIT if "limit" in scenario.needs else ROOMY
        result = Runner.run_sync(agents[COORDINATOR], TASK, max_turns=turns)
        return result.final_output

    record_team(
        framework="openai-agents",
        instrumentation="openinference-instrumentation-openai-agents (OpenAIAgentsInstrumentor, exclusive processor)",
        packages=["openai-agents", "openinference-instrumentation-openai-agents", "openinference-instrumentation",
                  "openinference-semantic-conventions", "openai", "opentelemetry-sdk"],
        run=run, delegate=delegate, topology="delegation", exporter=exporter, provider=provider, args=args,
        cannot={"dropped_context": "agents as tools: the sub-agent's nested run always starts from the tool's input "
                                   "string alone, by design; there is no transfer whose conversation could be dropped"},
        notes=("Agents coordinator/operator/verifier (Agent name = role), OpenAIChatCompletionsModel over "
               "AsyncOpenAI(base_url=stub). Delegation: coordinator.tools += [operator.as_tool(tool_name='operator'), "
               "verifier.as_tool(tool_name='verifier')]; the model calls them with {'input': message}, the nested "
               "run's final output is the tool result. Limit: Runner.run_sync(coordinator, max_turns=LIMIT) for "
               f"team_limit (MaxTurnsExceeded; counts coordinator turns only), max_turns={ROOMY} elsewhere; nested runs "
               "use as_tool's default max_turns (10) each. No-content: OPENINFERENCE_HIDE_INPUTS/OUTPUTS=true. "
               "Spans: root 'Agent workflow' (AGENT) > 'Agent workflow' (CHAIN) > AGENT span 'coordinator' "
               "(agent.name, graph.node.id) > 'turn' (CHAIN) > 'generation' (LLM) and tool spans. A delegation is a "
               "TOOL span named after the agent tool ('operator'/'verifier', tool.name the same, input.value "
               "{\"input\": message}, output.value = the sub-agent's final output, i.e. the result coming back) "
               "nesting a new 'Agent workflow' (CHAIN) > AGENT span 'operator' (agent.name, graph.node.id; no "
               "graph.node.parent_id) > its own turns, generations and tool spans: sub-agents are nested under the "
               "coordinator's tool span, one trace. With content the coordinator's generation also names the tool "
               "call (llm.output_messages ... function.name 'operator'). Limit: the coordinator AGENT span ends "
               "with status ERROR \"Max turns exceeded: {'max_turns': 8}\" (no exception event), workflow spans OK. "
               "No-content: input.value/output.value '__REDACTED__' on generation and tool spans (including the "
               "agent tool: neither the message nor the returned report is kept), llm.input/output_messages "
               "absent; the delegation target is the tool span's name/tool.name and the nested AGENT span."),
    )


if __name__ == "__main__":
    main()
