"""Google ADK (2.13) through its native OpenTelemetry spans: how a new user sets up tracing per its docs.

ADK reports to the global tracer provider, so the provider is set before ADK is imported
(default telemetry schema, default content settings). The model is ``LiteLlm`` on the stub.
Limit: ``RunConfig(max_llm_calls=LIMIT)`` (raises ``LlmCallsLimitExceededError``). History: a
``before_model_callback`` that trims ``llm_request.contents``. Content: ADK's default
schema (v2) records content only when ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` asks
for it, so the content run sets it to ``SPAN_ONLY``; the no-content run sets ``NO_CONTENT`` (its
default) and ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false``. The same switch sends content to log
records: ``EVENT_ONLY`` (what ``true`` means to ADK 2.x) puts it in the
``gen_ai.client.inference.operation.details`` record of each model call only, ``SPAN_AND_EVENT`` on
the span too; that record is emitted in every mode, without content when the mode says none.
The events and both modes record only ``EVENT_SCENARIOS`` (the corpus stays small).
"""

import asyncio
import os

from tests.frameworks.harness.recording import arguments, logger_provider, record_all, tracer_provider
from tests.frameworks.harness.scenarios import HISTORY_KEEP, HISTORY_TRIGGER, INSTRUCTIONS, LIMIT, TASK

CONTENT_MODES = ("spans", "off", "events", "both")
# ADK's default schema (v2, GenAI-semconv aligned) captures no content unless the standard OTel GenAI
# switch asks for it; ADK reads it itself (context.py), "true" meaning EVENT_ONLY.
SWITCH = {"off": "NO_CONTENT", "spans": "SPAN_ONLY", "events": "EVENT_ONLY", "both": "SPAN_AND_EVENT"}
EVENT_SCENARIOS = ("clean", "loop", "limit")


def main() -> None:
    args = arguments()
    switches = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": SWITCH[args.content]}
    if args.no_content:
        switches["ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"] = "false"  # ADK's own switch (legacy-schema spans)
    os.environ.update(switches)
    provider, exporter = tracer_provider()  # global providers before ADK creates its tracers and loggers
    logs = logger_provider()

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
        run=run, exporter=exporter, provider=provider, args=args, logs=logs, switches=switches,
        scenarios=EVENT_SCENARIOS if args.content in ("events", "both") else None,
        notes=("Agent name 'sre_agent' (ADK rejects 'sre-agent': names must be identifiers). Model: "
               "LiteLlm('openai/gpt-4o-mini', api_base=stub). Limit: RunConfig(max_llm_calls=LIMIT) raises "
               "LlmCallsLimitExceededError on call LIMIT+1. History: before_model_callback that, once "
               f"llm_request.contents (instruction excluded) exceeds {HISTORY_TRIGGER}, keeps the last {HISTORY_KEEP} "
               "for that request only (the session keeps every event). Content: ADK 2.x's default telemetry schema "
               "(v2) captures no content by default; the content run sets "
               "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY, the no-content run NO_CONTENT plus "
               "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false, the events run EVENT_ONLY, the both run SPAN_AND_EVENT "
               "(content_switches says which this folder is); a gen_ai.client.inference.operation.details log "
               "record per model call is emitted in every mode. A raised tool exception is not caught by ADK: it aborts "
               "the run (no model call after it). litellm 1.106.2 needs the mcp package at call time."),
    )


if __name__ == "__main__":
    main()
