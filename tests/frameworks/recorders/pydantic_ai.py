"""Pydantic AI (pydantic-ai-slim) through its native OpenTelemetry GenAI instrumentation (no Logfire):
how a new user sets up tracing per its docs ("Using OpenTelemetry without Logfire": an SDK tracer
provider, then ``Agent.instrument_all(...)``)."""

from tests.frameworks.harness.recording import arguments, record_all, tracer_provider
from tests.frameworks.harness.scenarios import HISTORY_KEEP, HISTORY_TRIGGER, INSTRUCTIONS, LIMIT, TASK


def main() -> None:
    args = arguments()
    provider, exporter = tracer_provider()

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.usage import UsageLimits

    # Default settings; with --no-content the documented include_content=False switch.
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider, include_content=not args.no_content))

    def keep_last(messages):
        """History processor: past HISTORY_TRIGGER messages (instructions included), only the last HISTORY_KEEP.

        The agent's instructions are not part of the message list in Pydantic AI: they are sent
        with every request, so "the system prompt plus the last HISTORY_KEEP messages" is just
        the last HISTORY_KEEP messages here."""
        if len(messages) + 1 <= HISTORY_TRIGGER:
            return messages
        return messages[-HISTORY_KEEP:]

    def run(scenario, stub, cluster):
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=stub.base_url, api_key="sk-stub"))
        agent = Agent(
            model,
            name="sre-agent",
            instructions=INSTRUCTIONS,
            tools=cluster.tools(),
            capabilities=[ProcessHistory(keep_last)] if scenario.name == "history" else None,
        )
        result = agent.run_sync(TASK, usage_limits=UsageLimits(request_limit=LIMIT))
        return result.output

    record_all(
        framework="pydantic-ai",
        instrumentation="pydantic-ai native OpenTelemetry (Agent.instrument_all(InstrumentationSettings(tracer_provider=...)), default version)",
        packages=["pydantic-ai-slim", "pydantic-graph", "openai", "opentelemetry-sdk"],
        run=run, exporter=exporter, provider=provider, args=args,
        notes=("Model: OpenAIChatModel('gpt-4o-mini', provider=OpenAIProvider(base_url=stub)). Limit: "
               "UsageLimits(request_limit=LIMIT) (raises UsageLimitExceeded before the request past the limit). "
               "History: capabilities=[ProcessHistory(fn)] (this version's form of history_processors=[...]); it "
               "replaces the run's stored history too, so the drop is permanent. Instructions are not in the "
               "message list, so they are counted as one message for the trigger and always kept. Tool "
               "exceptions: Pydantic AI does not catch a tool's exception (only ModelRetry goes back to the "
               "model), so scenario tool_exception ends with the exception after 2 model calls. No-content: "
               "InstrumentationSettings(include_content=False)."),
    )


if __name__ == "__main__":
    main()
