"""Google ADK (2.13) through its native OpenTelemetry spans: how a new user sets up tracing per its docs.

ADK reports to the global tracer provider, so the provider is set before ADK is imported
(default telemetry schema, default content settings). The model is ``LiteLlm`` on the stub.
Limit: ``RunConfig(max_llm_calls=LIMIT)`` (raises ``LlmCallsLimitExceededError``). History: a
``before_model_callback`` that trims ``llm_request.contents``. Content: ADK's default
schema (v2) records content only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks
for it, so the content run sets it to ``SPAN_ONLY``; the no-content run sets ``NO_CONTENT`` (its
default) and ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false``.
"""

import asyncio
import os

from tests.frameworks.harness.recording import arguments, record_all, tracer_provider
from tests.frameworks.harness.scenarios import HISTORY_KEEP, HISTORY_TRIGGER, INSTRUCTIONS, LIMIT, TASK


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"] = "false"  # ADK's own switch (legacy-schema spans)
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "NO_CONTENT"  # the default, spelt out
    else:
        # ADK's default schema (v2, GenAI-semconv aligned) captures no content unless the standard OTel
        # GenAI switch asks for it; a user who wants prompts/results in traces sets this.
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    provider, exporter = tracer_provider()  # global provider before ADK creates its tracers

    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    def trim_history(callback_context, llm_request):
        """Once the conversation about to be sent exceeds HISTORY_TRIGGER messages, keep the last HISTORY_KEEP."""
        if len(llm_request.contents) > HISTORY_TRIGGER:  # the instruction travels apart, in the config
            llm_request.contents = llm_request.contents[-HISTORY_KEEP:]
        return None

    async def run_async(scenario, stub, cluster):
        agent = LlmAgent(
            name="sre_agent",  # ADK requires an identifier: "sre-agent" is rejected
            model=LiteLlm(model="openai/gpt-4o-mini", api_base=stub.base_url, api_key="x"),
            instruction=INSTRUCTIONS,
            tools=cluster.tools(),
            before_model_callback=trim_history if scenario.name == "history" else None,
        )
        runner = InMemoryRunner(agent=agent, app_name="sre")
        session = await runner.session_service.create_session(app_name="sre", user_id="user")
        message = types.Content(role="user", parts=[types.Part(text=TASK)])
        final = None
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message,
                                            run_config=RunConfig(max_llm_calls=LIMIT)):
            if event.is_final_response() and event.content and event.content.parts:
                final = event.content.parts[0].text
        return final

    def run(scenario, stub, cluster):
        return asyncio.run(run_async(scenario, stub, cluster))

    record_all(
        framework="google-adk",
        instrumentation="google-adk native OpenTelemetry (tracer gcp.vertex.agent, default schema)",
        packages=["google-adk", "google-genai", "litellm", "mcp", "opentelemetry-sdk", "opentelemetry-api"],
        run=run, exporter=exporter, provider=provider, args=args,
        notes=("Agent name 'sre_agent' (ADK rejects 'sre-agent': names must be identifiers). Model: "
               "LiteLlm('openai/gpt-4o-mini', api_base=stub). Limit: RunConfig(max_llm_calls=LIMIT) raises "
               "LlmCallsLimitExceededError on call LIMIT+1. History: before_model_callback that, once "
               f"llm_request.contents (instruction excluded) exceeds {HISTORY_TRIGGER}, keeps the last {HISTORY_KEEP} "
               "for that request only (the session keeps every event). Content: ADK 2.x's default telemetry schema "
               "(v2) captures no content by default; the content run sets "
               "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY, the no-content run NO_CONTENT plus "
               "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false. A raised tool exception is not caught by ADK: it aborts "
               "the run (no model call after it). litellm 1.106.2 needs the mcp package at call time."),
    )


if __name__ == "__main__":
    main()
