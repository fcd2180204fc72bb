"""Microsoft Agent Framework sessions (``agent.create_session()``) through its native OpenTelemetry instrumentation.

A conversation in Agent Framework 1.x is an ``AgentSession`` handed to every run
(``agent.run(text, session=session)``); for a chat-completions client the history is kept locally
by the agent's default in-memory history provider. The instrumentation writes
``gen_ai.conversation.id`` only for a session the service keeps (``service_session_id``), so a local
session's turns carry no session id at all: this recording shows that, it is not worked around.
The app that drops the history calls ``agent.run(text)`` without the session (the case issue 33
started from). Tracing: the framework's instrumentation is on by default and reports to the global
tracer provider; content through ``enable_instrumentation(enable_sensitive_data=True)``.
"""

import asyncio

from tests.sessions.harness.recording import arguments, record_sessions, tracer_provider
from tests.sessions.harness.scenarios import INSTRUCTIONS


def main() -> None:
    args = arguments()
    provider, exporter = tracer_provider()

    from agent_framework import Agent
    from agent_framework.observability import enable_instrumentation
    from agent_framework.openai import OpenAIChatCompletionClient

    enable_instrumentation(enable_sensitive_data=not args.no_content)

    loop = asyncio.new_event_loop()  # one loop for every turn of every session: the clients outlive a scenario

    def start(scenario, stub, cluster, session_id):
        client = OpenAIChatCompletionClient("gpt-4o-mini", api_key="sk-stub", base_url=stub.base_url)
        agent = Agent(client, INSTRUCTIONS, name="sre-assistant", tools=[cluster.get_pods])
        session = agent.create_session(session_id=session_id) if scenario.history else None

        def send(text):
            result = loop.run_until_complete(agent.run(text, session=session))
            return result.text

        return send

    record_sessions(
        framework="agent-framework",
        instrumentation="agent-framework native OpenTelemetry (on by default; enable_instrumentation(enable_sensitive_data=...))",
        packages=["agent-framework-core", "agent-framework-openai", "openai", "opentelemetry-sdk"],
        start=start, exporter=exporter, provider=provider, args=args, session_attribute=None,
        notes=("Conversation: session = agent.create_session(session_id=<session id>), agent.run(text, session=session) "
               "per turn (local history: the default in-memory history provider). The instrumentation writes "
               "gen_ai.conversation.id only for service-kept sessions (service_session_id), so these turns carry no "
               "session id: grouping them needs an id the app adds itself. History dropped: agent.run(text) without "
               "the session. Model: OpenAIChatCompletionClient(base_url=stub). Tool: get_pods only. Content: "
               "enable_instrumentation(enable_sensitive_data=True); no content: enable_sensitive_data=False."),
    )


if __name__ == "__main__":
    main()
