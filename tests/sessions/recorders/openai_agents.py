"""OpenAI Agents SDK sessions (``SQLiteSession``) through OpenInference (openinference-instrumentation-openai-agents).

A conversation in the SDK is a session object handed to every run
(``Runner.run_sync(agent, text, session=SQLiteSession(session_id))``): the SDK prepends the stored
items to the new message and stores the turn's items after it. The SDK's own grouping of a
conversation's traces is ``RunConfig(group_id=...)``, which OpenInference does not export; the
session id reaches the spans through OpenInference's own ``using_session(session_id)`` context,
which the app wraps each turn in (OpenInference's documented way to set ``session.id``). The app
that drops the history runs without ``session=``: same ids, no history.
"""

import os

from tests.sessions.harness.recording import arguments, record_sessions, tracer_provider
from tests.sessions.harness.scenarios import INSTRUCTIONS


def main() -> None:
    args = arguments()
    if args.no_content:  # OpenInference's documented TraceConfig switches
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()

    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, SQLiteSession, function_tool
    from openai import AsyncOpenAI

    def start(scenario, stub, cluster, session_id):
        client = AsyncOpenAI(base_url=stub.base_url, api_key="sk-stub")
        agent = Agent(name="sre-assistant", instructions=INSTRUCTIONS,
                      model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
                      tools=[function_tool(cluster.get_pods)])
        session = SQLiteSession(session_id) if scenario.history else None  # in-memory SQLite

        def send(text):
            with using_session(session_id):
                result = Runner.run_sync(agent, text, session=session, run_config=RunConfig(group_id=session_id))
            return result.final_output

        return send

    record_sessions(
        framework="openai-agents",
        instrumentation="openinference-instrumentation-openai-agents (OpenAIAgentsInstrumentor, exclusive processor)",
        packages=["openai-agents", "openinference-instrumentation-openai-agents", "openinference-instrumentation",
                  "openinference-semantic-conventions", "openai", "opentelemetry-sdk"],
        start=start, exporter=exporter, provider=provider, args=args, session_attribute="session.id",
        notes=("Conversation: Runner.run_sync(agent, text, session=SQLiteSession(<session id>), "
               "run_config=RunConfig(group_id=<session id>)) inside openinference.instrumentation.using_session("
               "<session id>) per turn. OpenInference does not export the SDK's group_id; session.id comes from "
               "using_session. History dropped: no session=, the same group_id and using_session. Model: "
               "OpenAIChatCompletionsModel over AsyncOpenAI(base_url=stub). Tool: get_pods only. No-content: "
               "OPENINFERENCE_HIDE_INPUTS/OPENINFERENCE_HIDE_OUTPUTS=true."),
    )


if __name__ == "__main__":
    main()
