"""smolagents managed agents (1.26) through OpenInference: a coordinator ToolCallingAgent with
``managed_agents=[operator, verifier]``, each a ToolCallingAgent with a name and a description.

Tracing as smolagents' "Inspecting runs with OpenTelemetry" guide shows: ``SmolagentsInstrumentor().instrument(
tracer_provider=...)``, default TraceConfig; one trace per team run. Multi-agent primitive: managed agents,
which the coordinator's model sees as tools named after the agents with parameters ``task`` (required) and
``additional_args`` (nullable); a call runs the worker with a fresh memory on smolagents' managed-agent task
template and returns its final answer, wrapped in the report template, as the tool result (topology
"delegation"). Team limit: the coordinator's ``max_steps=LIMIT`` (smolagents then asks once more, without
tools, for a final answer; no exception). Content off: ``OPENINFERENCE_HIDE_INPUTS``/``OPENINFERENCE_HIDE_OUTPUTS``.
Cannot express dropped_context: a managed agent always starts from the task it is given, never from the
caller's conversation, so there is no transfer whose receiver would keep it.
"""

import os

from tests.frameworks.harness.stub_model import Call
from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.harness.scenarios import AGENTS, COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, TASK, tools_of


def delegate(source: str, target: str, message: str) -> Call:
    """A call of the managed agent's tool (its name), with the task as the ``task`` argument."""
    return Call(target, {"task": message})


def wrappers(cluster) -> dict:
    """Thin @tool wrappers with the cluster's names, parameters and docstrings (smolagents needs Args sections)."""
    from smolagents import tool

    @tool
    def get_pods(namespace: str) -> dict:
        """List the pods of a namespace with their status.

        Args:
            namespace: The namespace.
        """
        return cluster.get_pods(namespace)

    @tool
    def get_logs(pod: str, since_minutes: int) -> dict:
        """Read a pod's recent log lines.

        Args:
            pod: The pod.
            since_minutes: How many minutes back to read.
        """
        return cluster.get_logs(pod, since_minutes)

    @tool
    def get_rollout_status(deployment: str) -> dict:
        """Show how far a deployment's rollout has progressed.

        Args:
            deployment: The deployment.
        """
        return cluster.get_rollout_status(deployment)

    @tool
    def restart_deployment(deployment: str) -> dict:
        """Restart a deployment's pods (rolling restart).

        Args:
            deployment: The deployment.
        """
        return cluster.restart_deployment(deployment)

    @tool
    def check_health(deployment: str) -> dict:
        """Check whether a deployment is healthy: ready replicas and passing probes.

        Args:
            deployment: The deployment.
        """
        return cluster.check_health(deployment)

    return {t.name: t for t in (get_pods, get_logs, get_rollout_status, restart_deployment, check_health)}


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()

    from openinference.instrumentation.smolagents import SmolagentsInstrumentor

    SmolagentsInstrumentor().instrument(tracer_provider=provider)

    from smolagents import OpenAIServerModel, ToolCallingAgent

    def run(scenario, stub, cluster):
        model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=stub.base_url, api_key="x")
        tools = wrappers(cluster)
        agents = {name: ToolCallingAgent(tools=[tools[f.__name__] for f in tools_of(name, cluster)], model=model,
                                         name=name, description=DESCRIPTIONS[name], instructions=INSTRUCTIONS[name],
                                         verbosity_level=0)
                  for name in AGENTS if name != COORDINATOR}
        coordinator = ToolCallingAgent(tools=[tools[f.__name__] for f in tools_of(COORDINATOR, cluster)], model=model,
                                       name=COORDINATOR, description=DESCRIPTIONS[COORDINATOR],
                                       instructions=INSTRUCTIONS[COORDINATOR], managed_agents=list(agents.values()),
                                       max_steps=LIMIT, verbosity_level=0)
        return coordinator.run(TASK)

    record_team(
        framework="smolagents",
        instrumentation="openinference-instrumentation-smolagents (SmolagentsInstrumentor, default TraceConfig)",
        packages=["smolagents", "openinference-instrumentation-smolagents", "openinference-instrumentation",
                  "openinference-semantic-conventions", "openai", "opentelemetry-sdk", "opentelemetry-api"],
        run=run, delegate=delegate, exporter=exporter, provider=provider, args=args, topology="delegation",
        cannot={"dropped_context": "a managed agent always starts from the task it is given (fresh memory on the "
                                   "managed-agent task template), never from the caller's conversation, so no "
                                   "transfer can drop a conversation its receiver would otherwise keep"},
        notes=NOTES)


NOTES = (
    "Team: ToolCallingAgent coordinator(managed_agents=[operator, verifier], max_steps=LIMIT); workers are "
    "ToolCallingAgents with name, description=DESCRIPTIONS, instructions=INSTRUCTIONS (appended to smolagents' own "
    "system prompt), default max_steps 20, their cluster tools as @tool wrappers with the cluster's names. "
    "Delegation: the coordinator's model calls the tool named after the agent with {'task': message} "
    "(additional_args nullable, left out); the worker runs with a fresh memory on the managed-agent task template "
    "('You're a helpful agent named 'operator'. ... Task: ...') and its final_answer comes back as the observation "
    "\"Here is the final answer from your managed agent 'operator': ...\". Final answers are final_answer tool calls. "
    "Limit: max_steps=LIMIT on the coordinator; after LIMIT steps smolagents makes one more model call without tools "
    "(system prompt 'An agent tried to answer a user query but it got stuck...', no role marker, so the stub cannot "
    "tell who asks and answers 'Done.', asked_by None) and returns that answer; no exception. "
    "Spans (OpenInference, one trace per run): AGENT '<name>.run' per agent run (coordinator.run the root; "
    "smolagents.max_steps, smolagents.tools_names, and on the coordinator smolagents.managed_agents.N.name/"
    ".description; token counts summed), CHAIN 'Step N' per step, LLM 'OpenAIModel.generate', TOOL spans named by "
    "class ('SimpleTool' for @tool functions, 'FinalAnswerTool') with tool.name. Agent names: only in the AGENT span "
    "names '<name>.run' (no agent-name attribute; LLM and tool spans inherit it only through ancestry). Delegation: "
    "no TOOL span; the worker's '<name>.run' AGENT span is a direct child of the coordinator's 'Step N'; the call "
    "(function name = agent name, arguments {'task': ...}) is only in the coordinator LLM span's "
    "llm.output_messages tool_calls, and OpenInference's llm.tools lists only the cluster tools and final_answer, "
    "not the managed agents, though the request offers them. Result: the worker's '<name>.run' output.value is its "
    "raw final answer; the coordinator's 'Step N' output.value and its next LLM input (role tool-response) carry the "
    "wrapped report. Limit: nothing is marked: every span is OK; the run shows LIMIT 'Step' spans under "
    "coordinator.run (smolagents.max_steps=8) and a last 'OpenAIModel.generate' directly under coordinator.run, "
    "outside any Step, whose output is the run's output. No content: input.value/output.value are '__REDACTED__' and "
    "llm.input/output_messages and llm.tools are gone, so the delegation target is only the child span's name; span "
    "names, tool.name, smolagents.* attributes and token counts stay.")

if __name__ == "__main__":
    main()
