"""smolagents managed agents (1.26) with CodeAgents, through OpenInference: a coordinator CodeAgent with
``managed_agents=[operator, verifier]``, each a CodeAgent with a name and a description.

The same team as the ToolCallingAgent recorder (``smolagents.py``), with every agent a ``CodeAgent``: the stub
model answers in the code dialect, so a tool call is ``result = get_pods(namespace='shop')`` in the model's
``<code>`` block, a delegation is ``result = operator(task='...')`` (a managed agent is a function in the
manager's Python executor), and an answer is ``final_answer(...)``. smolagents runs the code inside the
agent's ``Step N``; a CodeAgent sends the model no tools at all. Team limit: the coordinator's
``max_steps=LIMIT``. Content off: ``OPENINFERENCE_HIDE_INPUTS``/``OPENINFERENCE_HIDE_OUTPUTS``.
Cannot express dropped_context, for the ToolCallingAgent recorder's reason.
"""

import os

from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.harness.scenarios import AGENTS, COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, TASK, tools_of
from tests.teams.recorders.smolagents import delegate, wrappers


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()

    from openinference.instrumentation.smolagents import SmolagentsInstrumentor

    SmolagentsInstrumentor().instrument(tracer_provider=provider)

    from smolagents import CodeAgent, OpenAIServerModel

    def run(scenario, stub, cluster):
        model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=stub.base_url, api_key="x")
        tools = wrappers(cluster)
        agents = {name: CodeAgent(tools=[tools[f.__name__] for f in tools_of(name, cluster)], model=model,
                                  name=name, description=DESCRIPTIONS[name], instructions=INSTRUCTIONS[name],
                                  verbosity_level=0)
                  for name in AGENTS if name != COORDINATOR}
        coordinator = CodeAgent(tools=[tools[f.__name__] for f in tools_of(COORDINATOR, cluster)], model=model,
                                name=COORDINATOR, description=DESCRIPTIONS[COORDINATOR],
                                instructions=INSTRUCTIONS[COORDINATOR], managed_agents=list(agents.values()),
                                max_steps=LIMIT, verbosity_level=0)
        return coordinator.run(TASK)

    record_team(
        framework="smolagents-code",
        instrumentation="openinference-instrumentation-smolagents (SmolagentsInstrumentor, default TraceConfig)",
        packages=["smolagents", "openinference-instrumentation-smolagents", "openinference-instrumentation",
                  "openinference-semantic-conventions", "openai", "opentelemetry-sdk", "opentelemetry-api"],
        run=run, delegate=delegate, exporter=exporter, provider=provider, args=args, topology="delegation",
        dialect="code",
        cannot={"dropped_context": "a managed agent always starts from the task it is given (fresh memory on the "
                                   "managed-agent task template), never from the caller's conversation, so no "
                                   "transfer can drop a conversation its receiver would otherwise keep"},
        notes=NOTES)


NOTES = (
    "Team: CodeAgent coordinator(managed_agents=[operator, verifier], max_steps=LIMIT); workers are CodeAgents with "
    "name, description=DESCRIPTIONS, instructions=INSTRUCTIONS (appended to smolagents' own system prompt), default "
    "max_steps 20, their cluster tools as the ToolCallingAgent recorder's @tool wrappers. The stub answers in the code "
    "dialect: a scripted call is 'result = <tool>(<kwargs>)' then 'print(result)' in <code> tags, a delegation is the "
    "same with the managed agent's name and task=<message>, an answer is 'final_answer(<text>)'. No tools are sent to "
    "the model. Limit: max_steps=LIMIT on the coordinator, then one more model call for a final answer (no role "
    "marker: the stub answers 'Done.'). No content: OPENINFERENCE_HIDE_INPUTS=true, OPENINFERENCE_HIDE_OUTPUTS=true.")

if __name__ == "__main__":
    main()
