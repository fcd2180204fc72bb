"""Pydantic AI's conversation primitive, message history, through its native OpenTelemetry GenAI instrumentation.

A conversation in Pydantic AI is the message list the app hands back each turn
(``agent.run(prompt, message_history=previous.all_messages(), conversation_id=...)``); the
instrumentation writes the run's ``conversation_id`` as ``gen_ai.conversation.id``. The app that
drops the history calls ``agent.run(prompt, conversation_id=...)`` alone: same id, no history.
Tracing as the framework corpus sets it up (``Agent.instrument_all(InstrumentationSettings(...))``).
"""

from tests.sessions.harness.recording import arguments, record_sessions, tracer_provider
from tests.sessions.harness.scenarios import INSTRUCTIONS


def main() -> None:
    args = arguments()
    provider, exporter = tracer_provider()

    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider, include_content=not args.no_content))

    def start(scenario, stub, cluster, session_id):
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=stub.base_url, api_key="sk-stub"))
        agent = Agent(model, name="sre-assistant", instructions=INSTRUCTIONS, tools=[cluster.get_pods])
        history = []

        def send(text):
            result = agent.run_sync(text, message_history=history if scenario.history else None,
                                    conversation_id=session_id)
            if scenario.history:
                history[:] = result.all_messages()
            return result.output

        return send

    record_sessions(
        framework="pydantic-ai",
        instrumentation="pydantic-ai native OpenTelemetry (Agent.instrument_all(InstrumentationSettings(tracer_provider=...)), default version)",
        packages=["pydantic-ai-slim", "pydantic-graph", "openai", "opentelemetry-sdk"],
        start=start, exporter=exporter, provider=provider, args=args, session_attribute="gen_ai.conversation.id",
        notes=("Conversation: agent.run_sync(text, message_history=<the previous result's all_messages()>, "
               "conversation_id=<session id>) per turn; history dropped: message_history=None, the same "
               "conversation_id. Model: OpenAIChatModel over OpenAIProvider(base_url=stub). Tool: get_pods only. "
               "No-content: InstrumentationSettings(include_content=False)."),
    )


if __name__ == "__main__":
    main()
