"""OpenAI Agents SDK (openai-agents) through OpenInference (openinference-instrumentation-openai-agents):
how a new user sets up tracing per the instrumentation's README.

``OpenAIAgentsInstrumentor().instrument(tracer_provider=...)`` registers the OpenInference trace
processor *exclusively* (its default), which replaces the SDK's own processor that uploads traces
to OpenAI: only OpenInference spans are exported, nothing is sent to OpenAI.
"""

import os

from tests.frameworks.harness.recording import arguments, record_all, tracer_provider
from tests.frameworks.harness.scenarios import HISTORY_KEEP, HISTORY_TRIGGER, INSTRUCTIONS, LIMIT, TASK


def main() -> None:
    args = arguments()
    if args.no_content:
        # OpenInference's documented TraceConfig switches (read from the environment when the
        # instrumentor builds its TraceConfig).
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()

    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
    from agents.run_config import ModelInputData
    from agents.tracing import get_trace_provider
    from openai import AsyncOpenAI

    processors = get_trace_provider()._multi_processor._processors  # only OpenInference's, no OpenAI upload
    assert [type(p).__name__ for p in processors] == ["OpenInferenceTracingProcessor"], processors

    def keep_last(data):
        """History hook: past HISTORY_TRIGGER messages, only the instructions and the last HISTORY_KEEP items."""
        model_data = data.model_data
        messages = len(model_data.input) + (1 if model_data.instructions else 0)
        if messages <= HISTORY_TRIGGER:
            return model_data
        return ModelInputData(input=list(model_data.input[-HISTORY_KEEP:]), instructions=model_data.instructions)

    def run(scenario, stub, cluster):
        client = AsyncOpenAI(base_url=stub.base_url, api_key="sk-stub")
        agent = Agent(
            name="sre-agent",
            instructions=INSTRUCTIONS,
            model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
            tools=[function_tool(tool) for tool in cluster.tools()],
        )
        config = RunConfig(call_model_input_filter=keep_last if scenario.name == "history" else None)
        result = Runner.run_sync(agent, TASK, max_turns=LIMIT, run_config=config)
        return result.final_output

    record_all(
        framework="openai-agents",
        instrumentation="openinference-instrumentation-openai-agents (OpenAIAgentsInstrumentor, exclusive processor)",
        packages=["openai-agents", "openinference-instrumentation-openai-agents", "openinference-instrumentation",
                  "openinference-semantic-conventions", "openai", "opentelemetry-sdk"],
        run=run, exporter=exporter, provider=provider, args=args,
        notes=("Model: OpenAIChatCompletionsModel over AsyncOpenAI(base_url=stub). Limit: Runner.run_sync(max_turns=LIMIT) "
               "(raises MaxTurnsExceeded). History: RunConfig(call_model_input_filter=...) keeping the instructions "
               "and the last HISTORY_KEEP input items once instructions+items exceed HISTORY_TRIGGER (the filter "
               "applies per call; the run's own history stays whole). Tool exceptions: function_tool's default "
               "failure_error_function (the model gets a generic error string). No-content: "
               "OPENINFERENCE_HIDE_INPUTS=true and OPENINFERENCE_HIDE_OUTPUTS=true. The instrumentor's default "
               "exclusive processor replaces the SDK's OpenAI trace uploader."),
    )


if __name__ == "__main__":
    main()
