"""Google ADK team with sub-agents and ``transfer_to_agent`` (as ``google_adk``), traced through OpenInference
(openinference-instrumentation-google-adk) instead of ADK's native spans.

The same team, model, transfers, limit and dropped_context as ``google_adk``, so the two
instrumentations can be compared on one team. Tracing: ``GoogleADKInstrumentor().instrument(
tracer_provider=...)`` on a provider that is not made global, so ADK's own spans (which use the
global one) stay out. Content off: ``OPENINFERENCE_HIDE_INPUTS`` / ``OPENINFERENCE_HIDE_OUTPUTS``.
"""

import asyncio
import os

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.frameworks.harness.recording import SERVICE
from tests.teams.harness.recording import arguments, record_team
from tests.teams.harness.scenarios import COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, OPERATOR, TASK, VERIFIER, tools_of
from tests.teams.recorders.google_adk import ROOMY, delegate


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    from openinference.instrumentation.google_adk import GoogleADKInstrumentor

    GoogleADKInstrumentor().instrument(tracer_provider=provider)

    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    async def run_async(scenario, stub, cluster):
        model = LiteLlm(model="openai/gpt-4o-mini", api_base=stub.base_url, api_key="x")
        drops = "transfer" in scenario.needs
        workers = [LlmAgent(name=name, model=model, instruction=INSTRUCTIONS[name], description=DESCRIPTIONS[name],
                            tools=tools_of(name, cluster),
                            include_contents="none" if drops and name == OPERATOR else "default")
                   for name in (OPERATOR, VERIFIER)]
        coordinator = LlmAgent(name=COORDINATOR, model=model, instruction=INSTRUCTIONS[COORDINATOR],
                               description=DESCRIPTIONS[COORDINATOR], tools=tools_of(COORDINATOR, cluster),
                               sub_agents=workers)
        runner = InMemoryRunner(agent=coordinator, app_name="sre")
        session = await runner.session_service.create_session(app_name="sre", user_id="user")
        message = types.Content(role="user", parts=[types.Part(text=TASK)])
        calls = LIMIT if "limit" in scenario.needs else ROOMY
        final = None
        async for event in runner.run_async(user_id="user", session_id=session.id, new_message=message,
                                            run_config=RunConfig(max_llm_calls=calls)):
            if event.is_final_response() and event.content and event.content.parts:
                final = event.content.parts[0].text
        return final

    def run(scenario, stub, cluster):
        return asyncio.run(run_async(scenario, stub, cluster))

    record_team(
        framework="google-adk",
        instrumentation="openinference-instrumentation-google-adk (GoogleADKInstrumentor)",
        packages=["google-adk", "google-genai", "litellm", "openinference-instrumentation-google-adk", "opentelemetry-sdk"],
        run=run, delegate=delegate, topology="transfer", exporter=exporter, provider=provider, args=args,
        notes="see the module docstring of tests/teams/recorders/google_adk_openinference.py",
    )


if __name__ == "__main__":
    main()
