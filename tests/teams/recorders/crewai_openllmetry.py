"""CrewAI (1.15) hierarchical crew (as ``crewai``) through OpenLLMetry (opentelemetry-instrumentation-crewai,
with opentelemetry-instrumentation-openai for the model calls CrewAI makes through the OpenAI SDK).

The same crew, delegation and limit as ``crewai``, so the two instrumentations can be compared on
one team. Content off: ``TRACELOOP_TRACE_CONTENT=false``. Cannot express dropped_context, for the
reason ``crewai`` gives.
"""

import os

from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.harness.scenarios import COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, OPERATOR, TASK, VERIFIER, tools_of
from tests.teams.recorders.crewai import delegate

os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
    provider, exporter = tracer_provider()

    from opentelemetry.instrumentation.crewai import CrewAIInstrumentor
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    CrewAIInstrumentor().instrument(tracer_provider=provider)
    OpenAIInstrumentor().instrument(tracer_provider=provider)

    from crewai import LLM, Agent, Crew, Process, Task
    from crewai.tools import tool

    def run(scenario, stub, cluster):
        llm = LLM(model="openai/gpt-4o-mini", base_url=stub.base_url, api_key="x")
        limit = {"max_iter": LIMIT} if "limit" in scenario.needs else {}
        coordinator = Agent(role=COORDINATOR, goal=DESCRIPTIONS[COORDINATOR], backstory=INSTRUCTIONS[COORDINATOR],
                            llm=llm, allow_delegation=True, verbose=False, **limit)
        workers = [Agent(role=name, goal=DESCRIPTIONS[name], backstory=INSTRUCTIONS[name], llm=llm,
                         tools=[tool(fn) for fn in tools_of(name, cluster)], allow_delegation=False, verbose=False)
                   for name in (OPERATOR, VERIFIER)]
        task = Task(description=TASK, expected_output="What was wrong and what the team did about it.")
        crew = Crew(agents=workers, tasks=[task], process=Process.hierarchical, manager_agent=coordinator,
                    verbose=False)
        return crew.kickoff()

    record_team(
        framework="crewai", topology="delegation", delegate=delegate, run=run, exporter=exporter, provider=provider,
        args=args, instrumentation="opentelemetry-instrumentation-crewai + opentelemetry-instrumentation-openai "
                                   "(OpenLLMetry)",
        packages=["crewai", "opentelemetry-instrumentation-crewai", "opentelemetry-instrumentation-openai",
                  "openai", "opentelemetry-sdk"],
        cannot={"dropped_context": "as for the OpenInference recording: a delegated coworker always starts from "
                                   "the task text it is given, and the manager cannot have tools"},
        notes="see the module docstrings of tests/teams/recorders/crewai_openllmetry.py and crewai.py",
    )


if __name__ == "__main__":
    main()
