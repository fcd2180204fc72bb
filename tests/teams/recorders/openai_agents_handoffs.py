"""OpenAI Agents SDK team with handoffs, traced through OpenInference (openinference-instrumentation-openai-agents).

Tracing: ``OpenAIAgentsInstrumentor().instrument(tracer_provider=...)`` as its README shows; its
default exclusive processor replaces the SDK's OpenAI trace uploader, so only OpenInference
spans are exported. Primitive: ``Agent(handoffs=[...])``: the coordinator hands off to the
operator and the verifier, each of them hands back to the coordinator (``transfer_to_<name>``,
no arguments; the model's text beside the call carries the task or the report, since a handoff
without ``input_type`` carries no message). Topology: transfer of control. Team limit:
``Runner.run_sync(max_turns=LIMIT)`` counts every agent's model calls in the one run and raises
``MaxTurnsExceeded``; scenarios that do not test the limit run with ``max_turns=ROOMY`` because
several scripts need more than LIMIT turns. dropped_context: the coordinator's handoff to the
operator is ``handoff(operator, input_filter=drop_history)``, which keeps only the user's task.
Content off: ``OPENINFERENCE_HIDE_INPUTS`` / ``OPENINFERENCE_HIDE_OUTPUTS``. Every scenario is
expressible.
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
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()

    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, handoff
    from agents.handoffs import HandoffInputData
    from agents.tracing import get_trace_provider
    from openai import AsyncOpenAI

    processors = get_trace_provider()._multi_processor._processors  # only OpenInference's, no OpenAI upload
    assert [type(p).__name__ for p in processors] == ["OpenInferenceTracingProcessor"], processors

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
        instrumentation="openinference-instrumentation-openai-agents (OpenAIAgentsInstrumentor, exclusive processor)",
        packages=["openai-agents", "openinference-instrumentation-openai-agents", "openinference-instrumentation",
                  "openinference-semantic-conventions", "openai", "opentelemetry-sdk"],
        run=run, delegate=delegate, topology="transfer", exporter=exporter, provider=provider, args=args,
        notes=("Agents coordinator/operator/verifier (Agent name = role), OpenAIChatCompletionsModel over "
               "AsyncOpenAI(base_url=stub). Handoffs: coordinator.handoffs=[operator, verifier], operator/verifier"
               ".handoffs=[coordinator]; the model calls transfer_to_<name> with {} and writes the task/report as "
               "text beside the call. Limit: Runner.run_sync(max_turns=LIMIT) for team_limit (MaxTurnsExceeded), "
               f"max_turns={ROOMY} elsewhere. dropped_context: handoff(operator, input_filter=drop_history) keeping "
               "only the user's task (pre_handoff_items and new_items dropped). No-content: "
               "OPENINFERENCE_HIDE_INPUTS/OUTPUTS=true. "
               "Spans: root 'Agent workflow' (AGENT) > 'Agent workflow' (CHAIN) > one AGENT span per activation, named "
               "after the agent (agent.name, graph.node.id = name, graph.node.parent_id = the agent that handed off), "
               "siblings in order, not nested; each > 'turn' (CHAIN) > 'generation' (LLM, no agent attribute) and "
               "the tool spans (TOOL, tool.name). A handoff is a TOOL span 'handoff to <target>' without tool.name, "
               "input.value = source agent, output.value = target agent; with content the generation's "
               "llm.output_messages also name transfer_to_<target> and carry the text beside it (task or report). "
               "A report comes back as the worker's generation text plus 'handoff to coordinator'; the coordinator "
               "then sees it in its input messages, the handoff's result being {\"assistant\": \"coordinator\"}. "
               "Limit: the AGENT span whose turn exceeded max_turns ends with status ERROR \"Max turns exceeded: "
               "{'max_turns': 8}\" (no exception event); the workflow spans end OK. No-content: input.value/"
               "output.value are '__REDACTED__' on generation, tool and handoff spans, llm.input/output_messages are "
               "absent, so the target is only in the handoff span's name and the next AGENT span. dropped_context: "
               "the filter also removes the coordinator's reads from the run's history, so its own later call no "
               "longer sees them."),
    )


if __name__ == "__main__":
    main()
