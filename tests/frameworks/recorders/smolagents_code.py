"""smolagents (1.26) CodeAgent through OpenInference: the agent writes code that calls the tools.

The same set-up as the ToolCallingAgent recorder (``smolagents.py``), with a ``CodeAgent``: the stub
model answers in the code dialect (``Thought: ...`` then ``<code>result = tool(...)\nprint(result)</code>``,
and ``final_answer(...)`` in code to end), which smolagents runs in its local Python executor inside
each ``Step N``. Limit: ``max_steps=LIMIT``. History: the same step callback trimming the memory.
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

    from smolagents import ActionStep, CodeAgent, OpenAIServerModel, tool

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
        agent = CodeAgent(tools=tools_for(cluster), model=model, name="sre_agent",
                          instructions=INSTRUCTIONS, max_steps=LIMIT, step_callbacks=callbacks,
                          verbosity_level=0)
        return agent.run(TASK)

    record_all(
        framework="smolagents-code",
        instrumentation="openinference-instrumentation-smolagents (SmolagentsInstrumentor, default TraceConfig)",
        packages=["smolagents", "openinference-instrumentation-smolagents", "openinference-instrumentation",
                  "openinference-semantic-conventions", "openai", "opentelemetry-sdk", "opentelemetry-api"],
        run=run, exporter=exporter, provider=provider, args=args, dialect="code",
        notes=("CodeAgent named 'sre_agent', instructions=INSTRUCTIONS appended to smolagents' own system prompt, "
               "the same @tool wrappers as the ToolCallingAgent recording. The stub model answers in the code dialect: "
               "each scripted call is 'result = <tool>(<kwargs>)' then 'print(result)' between <code> tags, the final "
               "answer is 'final_answer(<text>)' in code. No tools are sent to the model (a CodeAgent never sends any). "
               "Limit: max_steps=LIMIT, then one more model call for a final answer. History: step_callbacks="
               f"{{ActionStep: [trim]}} as in the ToolCallingAgent recording (trigger {HISTORY_TRIGGER}, keep {HISTORY_KEEP}). "
               "No-content: OPENINFERENCE_HIDE_INPUTS=true and OPENINFERENCE_HIDE_OUTPUTS=true."),
    )


if __name__ == "__main__":
    main()
