"""AutoGen AgentChat (0.7) ``Swarm``: three AssistantAgents that pass control with handoffs.

Tracing, as AutoGen's tracing guide sets it up: the global tracer provider, which the team's
embedded SingleThreadedAgentRuntime and the agents (create_agent / invoke_agent / execute_tool
spans) pick up, plus OpenLLMetry's OpenAI instrumentor for the model calls. The runtime starts a
new trace for each message it delivers, so the team run is wrapped in one application span
(``sre-team``), as a user who wants one trace per incident would; the clean scenario is also
recorded without it (``split/clean.json``) so a join by conversation id can be tested.

Primitive: ``Swarm([coordinator, operator, verifier])``; the coordinator has ``handoffs=["operator",
"verifier"]``, the workers ``handoffs=["coordinator"]``, so the model sees argument-less
``transfer_to_<agent>`` tools (the delegation message rides along as the text beside the call;
AutoGen puts it into the HandoffMessage's context). Every agent keeps AutoGen's default
``max_tool_iterations=1``: each model call is one turn of the team, and each tool result is
broadcast to all agents as a ToolCallSummaryMessage. The run ends on the coordinator's first text
answer (``TextMessageTermination(source="coordinator")``).
Team limit: ``Swarm(max_turns=LIMIT)`` (the run stops after LIMIT turns, no exception; the
TaskResult's stop_reason says so). dropped_context: the operator gets
``BufferedChatCompletionContext(buffer_size=1)``, so it sees only the last message (the handoff).
Content off: ``TRACELOOP_TRACE_CONTENT=false`` (OpenLLMetry) and ``AUTOGEN_DISABLE_RUNTIME_TRACING=true``:
the runtime's messaging spans serialise every delivered message (content included) with no switch of
their own, so they are turned off; the GenAI spans carry no content and stay.
Cannot express: nothing of the scenarios; but the team limit leaves no mark in the spans (the run
just stops; only the returned TaskResult's stop_reason says why).
"""

import asyncio
import os

from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.harness.scenarios import AGENTS, COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, OPERATOR, TASK, tools_of
from tests.frameworks.harness.stub_model import Call

HANDOFFS = {COORDINATOR: [a for a in AGENTS if a != COORDINATOR]}


def delegate(source: str, target: str, message: str) -> Call:
    """A Swarm handoff is an argument-less ``transfer_to_<target>`` tool; the message is the text beside it."""
    return Call(f"transfer_to_{target}", {}, say=message)


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["TRACELOOP_TRACE_CONTENT"] = "false"  # OpenLLMetry's documented switch
        # The runtime's send/publish/process spans carry every message it delivers as JSON (a `message`
        # attribute) and have no content switch: AutoGen's documented way to keep them out is to turn
        # runtime tracing off. The GenAI spans (create_agent, invoke_agent, execute_tool) stay.
        os.environ["AUTOGEN_DISABLE_RUNTIME_TRACING"] = "true"
    provider, exporter = tracer_provider()

    from opentelemetry import trace
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument()

    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import TextMessageTermination
    from autogen_agentchat.teams import Swarm
    from autogen_core.model_context import BufferedChatCompletionContext
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    tracer = trace.get_tracer("sre-team")

    def runner(wrap: bool):
        def run(scenario, stub, cluster):
            client = OpenAIChatCompletionClient(
                model="gpt-4o-mini", base_url=stub.base_url, api_key="x", parallel_tool_calls=False,
                model_info={"vision": False, "function_calling": True, "json_output": True,
                            "family": "gpt-4o", "structured_output": True},
            )

            async def go():
                agents = [
                    AssistantAgent(
                        name, model_client=client, tools=tools_of(name, cluster), description=DESCRIPTIONS[name],
                        system_message=INSTRUCTIONS[name], handoffs=HANDOFFS.get(name, [COORDINATOR]),
                        model_context=(BufferedChatCompletionContext(buffer_size=1)
                                       if name == OPERATOR and "transfer" in scenario.needs else None),
                    )
                    for name in AGENTS
                ]
                team = Swarm(agents, termination_condition=TextMessageTermination(source=COORDINATOR),
                             max_turns=LIMIT if "limit" in scenario.needs else None)
                try:
                    result = await team.run(task=TASK)
                    print(f"  stop_reason: {result.stop_reason}")
                    return result
                finally:
                    await client.close()

            if not wrap:
                return asyncio.run(go())
            with tracer.start_as_current_span("sre-team"):
                return asyncio.run(go())
        return run

    common = dict(
        framework="autogen", topology="transfer", delegate=delegate, exporter=exporter, provider=provider,
        instrumentation="autogen-core native GenAI + runtime spans, opentelemetry-instrumentation-openai (OpenLLMetry)",
        packages=["autogen-agentchat", "autogen-core", "autogen-ext", "opentelemetry-instrumentation-openai",
                  "openai", "opentelemetry-sdk"],
        notes=NOTES,
    )
    record_team(run=runner(wrap=True), args=args, **common)
    if not args.no_content and (not args.only or "clean" in args.only):
        args.out, args.only = args.out / "split", ["clean"]
        record_team(run=runner(wrap=False), args=args, **common)


NOTES = (
    "Swarm(coordinator, operator, verifier), TextMessageTermination(source='coordinator'); max_turns=LIMIT only for "
    "team_limit. Agents keep max_tool_iterations=1 (AutoGen's default), so every model call is one Swarm turn. "
    "Spans (content run): one trace under the application span 'sre-team'; 'create_agent <name>' x3 "
    "(gen_ai.agent.name, gen_ai.agent.description); the runtime's messaging spans 'autogen create|send|publish|"
    "process|ack <type>_<team-id>.(<team-id>)-A|T' (messaging.* attributes, 'message' = the delivered message as "
    "JSON, content included, no switch); each turn is 'autogen publish <agent>_<team-id>...-T' > 'autogen process "
    "<agent>_<team-id>...-A' > 'invoke_agent <agent>' (gen_ai.operation.name invoke_agent, gen_ai.agent.name, "
    "gen_ai.agent.id '<agent>_<team-id>/<team-id>', gen_ai.agent.description) > 'openai.chat' (OpenLLMetry: "
    "gen_ai.input.messages / gen_ai.output.messages / gen_ai.tool.definitions) and 'execute_tool <tool>' "
    "(gen_ai.tool.name, gen_ai.tool.call.id; no arguments or results). invoke_agent spans are siblings: no agent "
    "span nests another, and no span names the team. Handoff: the model's tool call transfer_to_<target> (no "
    "arguments; the delegation message is the text beside it) and an 'execute_tool transfer_to_<target>' span "
    "(gen_ai.tool.description 'Handoff to <target>.') inside the source's invoke_agent; the target is only in the "
    "tool name (and in the runtime's HandoffMessage payload 'target'); the next invoke_agent is the target's. "
    "Worker results come back as the text beside the worker's transfer_to_coordinator call (an assistant message "
    "of the worker in the coordinator's next input) and every tool result of every agent is broadcast as a "
    "ToolCallSummaryMessage (a user message in the others' inputs). Team limit: the run just stops after LIMIT "
    "turns (TaskResult.stop_reason 'Maximum number of turns 8 reached.'): no exception, no error status, no "
    "attribute; the last span is the operator's get_logs turn. dropped_context: BufferedChatCompletionContext("
    "buffer_size=1) on the operator: its first call sees only 'Transferred to operator, adopting the role of "
    "operator immediately.', later calls only the system prompt (a leading tool result is dropped by the buffer). "
    "The scenario's operator calls check_health, which tools_of does not give it: AutoGen answers \"Error: tool "
    "'check_health' not found in any workbench\" and no execute_tool span is made. No-content run: "
    "TRACELOOP_TRACE_CONTENT=false + AUTOGEN_DISABLE_RUNTIME_TRACING=true: only sre-team, create_agent, "
    "invoke_agent, openai.chat (no gen_ai.input/output.messages, no tool definitions) and execute_tool; "
    "invoke_agent spans are direct children of sre-team. split/clean.json: the clean run without the application "
    "span: 51 traces (each create_agent and each runtime publish/send starts a trace of its own); the only shared "
    "key is the team id inside gen_ai.agent.id and the runtime's topic/agent names."
)

if __name__ == "__main__":
    main()
