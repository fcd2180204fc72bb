"""Microsoft AutoGen AgentChat (0.7) with its native OpenTelemetry spans (autogen-core: create_agent,
invoke_agent, execute_tool) plus OpenLLMetry's OpenAI instrumentor for the model calls, as AutoGen's
tracing guide tells a user: how a new user sets up tracing per its docs."""

import asyncio
import os

from tests.frameworks.harness.recording import arguments, record_all, tracer_provider
from tests.frameworks.harness.scenarios import HISTORY_KEEP, HISTORY_TRIGGER, INSTRUCTIONS, LIMIT, TASK


def main() -> None:
    args = arguments()
    if args.no_content:
        # OpenLLMetry's documented switch; AutoGen's own spans carry no message or tool content.
        os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
    provider, exporter = tracer_provider()  # global: AgentChat agents trace to the global provider

    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument()

    from autogen_agentchat.agents import AssistantAgent
    from autogen_core.model_context import UnboundedChatCompletionContext
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    class TrimmedContext(UnboundedChatCompletionContext):
        """Past the trigger, the model sees only the last few messages (the system prompt is added
        by the agent outside the context, so it is always kept)."""

        async def get_messages(self):
            messages = await super().get_messages()
            if 1 + len(messages) > HISTORY_TRIGGER:
                return messages[-HISTORY_KEEP:]
            return messages

    def run(scenario, stub, cluster):
        client = OpenAIChatCompletionClient(
            model="gpt-4o-mini", base_url=stub.base_url, api_key="x",
            model_info={"vision": False, "function_calling": True, "json_output": True,
                        "family": "gpt-4o", "structured_output": True},
        )
        agent = AssistantAgent(
            name="sre_agent",  # AgentChat names must be Python identifiers: "sre-agent" is refused
            model_client=client,
            tools=cluster.tools(),
            system_message=INSTRUCTIONS,
            max_tool_iterations=LIMIT,
            # As in AutoGen's max_tool_iterations example: once the limit is hit, one more model call
            # (tool_choice="none") turns the tool results into the final answer. A run that ends on its
            # own (text answer) never reflects.
            reflect_on_tool_use=True,
            model_context=TrimmedContext() if scenario.name == "history" else None,
        )

        async def go():
            try:
                return await agent.run(task=TASK)
            finally:
                await client.close()

        return asyncio.run(go())

    record_all(
        framework="autogen",
        instrumentation="autogen-core native GenAI spans + opentelemetry-instrumentation-openai (OpenLLMetry)",
        packages=["autogen-agentchat", "autogen-core", "autogen-ext", "opentelemetry-instrumentation-openai",
                  "openai", "opentelemetry-sdk"],
        run=run, exporter=exporter, provider=provider, args=args,
        notes=("AssistantAgent 'sre_agent' (AgentChat requires an identifier name; 'sre-agent' raises ValueError) "
               "run with agent.run(task=TASK), no team or runtime; autogen-core traces to the global provider. "
               "Limit: max_tool_iterations=LIMIT with reflect_on_tool_use=True (the max_tool_iterations example in "
               "AutoGen's docs): after LIMIT tool-calling model calls one more call with tool_choice='none' writes "
               "the final answer; limit runs make LIMIT+1 model calls and raise nothing. History: a custom "
               "ChatCompletionContext (UnboundedChatCompletionContext subclass) whose get_messages returns only the "
               "last HISTORY_KEEP messages once system + context exceed HISTORY_TRIGGER; the stored history is "
               "untouched. Agent construction emits a separate 'create_agent' trace. execute_tool spans carry no "
               "arguments or results (AutoGen records none); tool exceptions are caught by AutoGen and returned to "
               "the model as an error result. No-content: TRACELOOP_TRACE_CONTENT=false (OpenLLMetry); AutoGen's "
               "own spans have no content switch and no content."),
    )


if __name__ == "__main__":
    main()
