"""Google ADK sessions (``InMemorySessionService``) through ADK's native OpenTelemetry spans.

A conversation in ADK is a session of its session service: each turn is
``runner.run_async(user_id, session_id, new_message)`` and ADK builds the model's input from the
session's stored events. ADK stamps the session id as ``gen_ai.conversation.id`` on its entrypoint
span. The app that drops the history keeps the session but configures the agent with
``include_contents='none'`` (ADK's own switch: the model gets the instruction and the current turn
only). Tracing as the framework corpus sets it up (global provider before ADK is imported; content
through ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``).
"""

import asyncio
import os

from tests.sessions.harness.recording import arguments, record_sessions, tracer_provider
from tests.sessions.harness.scenarios import INSTRUCTIONS


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"] = "false"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "NO_CONTENT"
    else:
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    provider, exporter = tracer_provider()  # global provider before ADK creates its tracers

    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    loop = asyncio.new_event_loop()  # one loop for every turn of every session: the clients outlive a scenario

    def start(scenario, stub, cluster, session_id):
        agent = LlmAgent(
            name="sre_assistant",  # ADK names must be identifiers
            model=LiteLlm(model="openai/gpt-4o-mini", api_base=stub.base_url, api_key="x"),
            instruction=INSTRUCTIONS,
            tools=[cluster.get_pods],
            include_contents="default" if scenario.history else "none",
        )
        runner = InMemoryRunner(agent=agent, app_name="sre")  # its session service is an InMemorySessionService
        loop.run_until_complete(runner.session_service.create_session(app_name="sre", user_id="dana",
                                                                      session_id=session_id))

        async def turn(text):
            final = None
            message = types.Content(role="user", parts=[types.Part(text=text)])
            async for event in runner.run_async(user_id="dana", session_id=session_id, new_message=message):
                if event.is_final_response() and event.content and event.content.parts:
                    final = event.content.parts[0].text
            return final

        return lambda text: loop.run_until_complete(turn(text))

    record_sessions(
        framework="google-adk",
        instrumentation="google-adk native OpenTelemetry (tracer gcp.vertex.agent, default schema)",
        packages=["google-adk", "google-genai", "litellm", "mcp", "opentelemetry-sdk", "opentelemetry-api"],
        start=start, exporter=exporter, provider=provider, args=args, session_attribute="gen_ai.conversation.id",
        notes=("Conversation: InMemoryRunner's InMemorySessionService, create_session(session_id=<session id>), "
               "then runner.run_async(user_id, session_id, new_message) per turn. History dropped: the same session "
               "with LlmAgent(include_contents='none'). Model: LiteLlm('openai/gpt-4o-mini', api_base=stub). Tool: "
               "get_pods only. Content: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY; no content: "
               "NO_CONTENT plus ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false."),
    )


if __name__ == "__main__":
    main()
