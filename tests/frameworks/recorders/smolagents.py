"""smolagents (1.26) ToolCallingAgent through OpenInference: how a new user sets up tracing per its docs.

``SmolagentsInstrumentor().instrument(tracer_provider=...)`` as in smolagents' "Inspecting runs
with OpenTelemetry" guide, default TraceConfig. Limit: ``max_steps=LIMIT`` (smolagents then asks
the model once more for a final answer, without tools). History: a step callback that trims
``agent.memory.steps``. Content off: ``OPENINFERENCE_HIDE_INPUTS`` / ``OPENINFERENCE_HIDE_OUTPUTS``.
"""

import os

from tests.frameworks.harness.recording import arguments, record_all, tracer_provider
from tests.frameworks.harness.scenarios import HISTORY_KEEP, HISTORY_TRIGGER, INSTRUCTIONS, LIMIT, TASK


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()

    from openinference.instrumentation.smolagents import SmolagentsInstrumentor

    SmolagentsInstrumentor().instrument(tracer_provider=provider)

    from smolagents import ActionStep, OpenAIServerModel, ToolCallingAgent, tool

    def tools_for(cluster):
        """Thin wrappers with the cluster's names, parameters and docstrings (smolagents needs an Args section)."""

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

        return [get_pods, get_logs, get_rollout_status, restart_deployment, check_health]

    def trim_memory(step, agent):
        """Once the conversation the next call would send exceeds HISTORY_TRIGGER messages (system prompt
        excluded), drop the oldest memory steps (the task first) until at most HISTORY_KEEP remain. Whole
        steps only; the callback runs before smolagents appends ``step`` to the memory, so it counts too."""
        def size(steps):
            return sum(len(s.to_messages()) for s in steps)

        steps = agent.memory.steps
        if size(steps) + size([step]) > HISTORY_TRIGGER:
            while steps and size(steps) + size([step]) > HISTORY_KEEP:
                steps.pop(0)

    def run(scenario, stub, cluster):
        model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=stub.base_url, api_key="x")
        callbacks = {ActionStep: [trim_memory]} if scenario.name == "history" else None
        agent = ToolCallingAgent(tools=tools_for(cluster), model=model, name="sre_agent",
                                 instructions=INSTRUCTIONS, max_steps=LIMIT, step_callbacks=callbacks,
                                 verbosity_level=0)
        return agent.run(TASK)

    record_all(
        framework="smolagents",
        instrumentation="openinference-instrumentation-smolagents (SmolagentsInstrumentor, default TraceConfig)",
        packages=["smolagents", "openinference-instrumentation-smolagents", "openinference-instrumentation",
                  "openinference-semantic-conventions", "openai", "opentelemetry-sdk", "opentelemetry-api"],
        run=run, exporter=exporter, provider=provider, args=args,
        notes=("ToolCallingAgent named 'sre_agent' (smolagents requires an identifier), instructions=INSTRUCTIONS "
               "appended to smolagents' own system prompt. Tools: @tool wrappers with the cluster's names, "
               "parameters and docstrings (+ Args sections). Final answers arrive as final_answer tool calls. "
               "Limit: max_steps=LIMIT; after LIMIT steps smolagents makes one more model call (no tools) for a "
               "final answer, so the limit run has LIMIT+1 model calls. History: step_callbacks={ActionStep: "
               "[trim]} that, once the memory's messages (system prompt excluded) exceed "
               f"{HISTORY_TRIGGER}, pops the oldest memory steps (the task first) while more than {HISTORY_KEEP} "
               "remain, whole steps only (a tool-calling ActionStep is 2 messages here: tool-call and tool-response, "
               "so the trimmed request carries the system prompt plus 2 messages, not 3). No-content: OPENINFERENCE_HIDE_INPUTS=true and OPENINFERENCE_HIDE_OUTPUTS=true."),
    )


if __name__ == "__main__":
    main()
