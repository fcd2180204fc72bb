"""CrewAI (1.15) hierarchical crew: a custom manager agent (the coordinator) delegates to two agents.

Tracing, as in the single-agent corpus: OpenInference's CrewAI instrumentor plus its OpenAI one (CrewAI
1.x sends ``openai/...`` models through the OpenAI SDK), on the global provider; the kickoff is one
trace (Crew span > task/agent spans > model and tool spans).

Primitive: ``Crew(agents=[operator, verifier], tasks=[Task(TASK)], process=Process.hierarchical,
manager_agent=coordinator)``. CrewAI names agents by role, so the roles are ``coordinator``,
``operator``, ``verifier``; each agent's backstory is ``INSTRUCTIONS[name]`` (CrewAI's system prompt is
"You are {role}. {backstory}\nYour personal goal is: {goal}", so the ``[role: NAME]`` marker reaches
it) and its goal ``DESCRIPTIONS[name]``. The manager gets CrewAI's own delegation tools
(``delegate_work_to_coworker`` / ``ask_question_to_coworker``, args ``task``, ``context``, ``coworker``);
a delegation runs the coworker on a new Task made of ``task`` (plus ``context``) and returns its final
answer to the manager as the tool result.
Team limit: the manager's ``max_iter=LIMIT`` (CrewAI then asks once more without tools for a final
answer and returns it: no exception). Content off: ``OPENINFERENCE_HIDE_INPUTS`` /
``OPENINFERENCE_HIDE_OUTPUTS=true``.
Cannot express: dropped_context (a delegated coworker always starts from the task text it is given,
by design; there is no transfer of a conversation to drop), and the coordinator's own cluster tools:
CrewAI refuses a manager agent with tools ("Manager agent should not have tools"), so the coordinator
only delegates (no other scenario gives the coordinator a cluster tool call).
"""

import os

from tests.frameworks.harness.stub_model import Call
from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.harness.scenarios import COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, OPERATOR, TASK, VERIFIER, tools_of

# CrewAI's own anonymous telemetry upload goes to a private TracerProvider: switching it off leaves ours alone.
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"


def delegate(source: str, target: str, message: str) -> Call:
    """CrewAI's 'Delegate work to coworker' tool as the model sees it (all three arguments are required)."""
    return Call("delegate_work_to_coworker", {"task": message, "context": f"The user's request: {TASK}",
                                              "coworker": target})


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()

    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

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
        args=args, instrumentation="openinference-instrumentation-crewai + openinference-instrumentation-openai",
        packages=["crewai", "openinference-instrumentation-crewai", "openinference-instrumentation-openai",
                  "openai", "opentelemetry-sdk"],
        cannot={"dropped_context": "CrewAI delegation runs the coworker on a new Task built from the delegation's "
                                   "task and context text: the coworker always starts from the message it is given, "
                                   "by design, so there is no conversation a transfer could drop (and the manager "
                                   "cannot read pods or logs itself: CrewAI refuses a manager agent with tools)."},
        notes=NOTES,
    )


NOTES = (
    "Crew(agents=[operator, verifier], one Task(TASK) without agent, Process.hierarchical, manager_agent="
    "coordinator with allow_delegation=True and no tools); workers allow_delegation=False with tools_of(name); "
    "max_iter=LIMIT on the manager only for team_limit (CrewAI default 25 otherwise). Every scenario played its "
    "script with no extra calls, except team_limit: after LIMIT delegations CrewAI makes a 9th manager call "
    "without tools, ending with the user message \"Now it's time you MUST give your absolute best final answer. "
    "...stop using any tools...\", and the stub answers 'Unfinished: the next step would have been "
    "delegate_work_to_coworker.'; kickoff returns it, no exception. Spans (OpenInference), one trace: "
    "'Crew_<crew id>.kickoff' (CHAIN; crew_id, crew_key, crew_agents = JSON list of the workers' role/goal/"
    "backstory/tools, crew_tasks, output.value) > '<manager role>._execute_core' i.e. 'coordinator._execute_core' "
    "(AGENT; graph.node.id = coordinator, task_id, input.value = agent and task JSON) > the manager's "
    "'ChatCompletion' LLM spans (input.value = request JSON with messages, output.value, llm.tools.N.tool."
    "json_schema = delegate_work_to_coworker / ask_question_to_coworker) and one 'Delegate work to coworker.run' "
    "TOOL span per delegation (tool.name 'Delegate work to coworker' with spaces while the model called "
    "'delegate_work_to_coworker'; input.value = {task, context, coworker}; output.value = the coworker's final "
    "answer). The coworker's own ChatCompletion and '<tool>.run' spans are children of that TOOL span: a "
    "delegated coworker gets NO agent span (CrewAI runs agent.execute_task directly, not Task._execute_core), so "
    "the worker's name is only in the delegation's input (coworker) and in its LLM input (system prompt 'You are "
    "operator. ...'), and its result only in the TOOL span's output.value and the manager's next LLM input (a "
    "tool message). Each delegation starts the coworker afresh from 'task' + 'context' (no earlier turns). "
    "No-content (OPENINFERENCE_HIDE_INPUTS/OUTPUTS): input.value/output.value are '__REDACTED__' on every span, "
    "so the delegation's target is nowhere except implicitly in the worker LLM spans' llm.tools schemas; the "
    "Crew span's crew_agents/crew_tasks still carry the roles, goals, backstories and task text. The team limit "
    "shows only as the manager's last LLM span offering no tools (no llm.tools.* attributes) with the forcing "
    "user message (content only); no status or error anywhere."
)

if __name__ == "__main__":
    main()
