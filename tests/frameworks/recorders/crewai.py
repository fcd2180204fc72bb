"""CrewAI (1.15) through OpenInference (openinference-instrumentation-crewai plus -openai, since CrewAI 1.x
sends ``openai/...`` models through the native OpenAI SDK): how a new user sets up tracing per its docs."""

import os

from tests.frameworks.harness.recording import arguments, record_all, tracer_provider
from tests.frameworks.harness.scenarios import HISTORY_KEEP, HISTORY_TRIGGER, INSTRUCTIONS, LIMIT, TASK

# CrewAI's own anonymous telemetry upload goes to a private TracerProvider (not the global one):
# switching it off leaves ours alone. OTEL_SDK_DISABLED must stay unset.
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"


def main() -> None:
    args = arguments()
    if args.no_content:
        # OpenInference's documented TraceConfig environment switches, read when instrumenting.
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()

    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

    CrewAIInstrumentor().instrument(tracer_provider=provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)

    from crewai import LLM, Agent, Crew, Task
    from crewai.hooks import register_before_llm_call_hook, unregister_before_llm_call_hook
    from crewai.tools import tool

    def trim_history(context) -> None:
        """A before-LLM-call hook: past the trigger, keep the system prompt and the last few messages.

        CrewAI hands the hook the executor's own message list and asks for in-place edits, so the
        trimmed history is also what the next call starts from."""
        messages = context.messages
        if len(messages) <= HISTORY_TRIGGER:
            return
        system = [m for m in messages[:1] if m.get("role") == "system"]
        kept = system + messages[-HISTORY_KEEP:]
        messages[:] = kept

    def run(scenario, stub, cluster):
        llm = LLM(model="openai/gpt-4o-mini", base_url=stub.base_url, api_key="x")
        agent = Agent(
            role="sre-agent",
            goal="Diagnose and fix Kubernetes incidents.",
            backstory=INSTRUCTIONS,
            llm=llm,
            tools=[tool(fn) for fn in cluster.tools()],
            max_iter=LIMIT,
            verbose=False,
        )
        task = Task(description=TASK, expected_output="What was wrong and what you did about it.", agent=agent)
        crew = Crew(agents=[agent], tasks=[task], verbose=False)
        hooked = scenario.name == "history"
        if hooked:
            register_before_llm_call_hook(trim_history)
        try:
            return crew.kickoff()
        finally:
            if hooked:
                unregister_before_llm_call_hook(trim_history)

    record_all(
        framework="crewai",
        instrumentation="openinference-instrumentation-crewai + openinference-instrumentation-openai",
        packages=["crewai", "openinference-instrumentation-crewai", "openinference-instrumentation-openai",
                  "openai", "opentelemetry-sdk"],
        run=run, exporter=exporter, provider=provider, args=args,
        notes=("Crew(one Agent role='sre-agent', one Task from TASK); LLM('openai/gpt-4o-mini') goes through CrewAI's "
               "native OpenAI provider (no litellm), native tool calls. Limit: Agent(max_iter=LIMIT): after LIMIT "
               "tool-calling model calls CrewAI makes one more call without tools (a user turn 'you MUST give your "
               "absolute best final answer') and returns that text: limit runs make LIMIT+1 model calls and raise "
               "nothing. History: a global before_llm_call hook (crewai.hooks.register_before_llm_call_hook) that "
               "trims context.messages in place, as CrewAI's hook API requires; the executor's own history is "
               "trimmed, so later calls grow again from the trimmed list. Tool exceptions are caught by CrewAI and "
               "sent back to the model as 'Error executing tool: ...'. No-content: OPENINFERENCE_HIDE_INPUTS / "
               "OPENINFERENCE_HIDE_OUTPUTS=true; crew_agents / crew_tasks attributes on the Crew span still carry "
               "the task text and agent backstory. CREWAI_DISABLE_TELEMETRY=true (CrewAI's upload uses its own "
               "private provider; the global one is untouched)."),
    )


if __name__ == "__main__":
    main()
