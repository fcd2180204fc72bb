"""Google ADK team with sub-agents and ``transfer_to_agent``, traced by ADK's native OpenTelemetry spans.

Tracing: ADK reports to the global tracer provider, set before ADK is imported, default
telemetry schema (as tests/frameworks/recorders/google_adk.py). Primitive: the coordinator is an
``LlmAgent`` with ``sub_agents=[operator, verifier]``; ADK gives every agent its own
``transfer_to_agent(agent_name)`` tool (the coordinator can reach its sub-agents, they can reach
their parent and each other) and runs the target agent in the same invocation. The operator and
the verifier report by transferring back to the coordinator (the report is the text beside the
call). Topology: transfer of control. Model: ``LiteLlm`` on the stub. Team limit:
``RunConfig(max_llm_calls=LIMIT)`` counts every agent's model calls in the invocation and raises
``LlmCallsLimitExceededError``; other scenarios run with ``max_llm_calls=ROOMY``. dropped_context:
``include_contents="none"`` on the operator: ADK then sends it only the "current turn", which
it anchors at the latest event from a user or another agent that is not a transfer, here the
coordinator's last tool result; so the operator loses the user's task and the pod listing but
still sees the coordinator's last log read and its transfer message (ADK's design, recorded as is). Content: the content run sets ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=
SPAN_ONLY`` (ADK captures none by default); the no-content run ``NO_CONTENT`` plus
``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false``. Every scenario is expressible.
"""

import asyncio
import os

from tests.frameworks.harness.stub_model import Call
from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.harness.scenarios import COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, OPERATOR, TASK, VERIFIER, tools_of

ROOMY = 40  # max_llm_calls for scenarios that do not test the limit (the longest script has 17 model calls)


def delegate(source: str, target: str, message: str) -> Call:
    """ADK's transfer tool takes the agent's name only (no reason parameter by default); the message rides as text."""
    return Call("transfer_to_agent", {"agent_name": target}, say=message)


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS"] = "false"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "NO_CONTENT"
    else:
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    provider, exporter = tracer_provider()  # global provider before ADK creates its tracers

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
        instrumentation="google-adk native OpenTelemetry (tracer gcp.vertex.agent, default schema)",
        packages=["google-adk", "google-genai", "litellm", "mcp", "opentelemetry-sdk", "opentelemetry-api"],
        run=run, delegate=delegate, topology="transfer", exporter=exporter, provider=provider, args=args,
        notes=("LlmAgents coordinator (sub_agents=[operator, verifier]), operator, verifier; LiteLlm('openai/"
               "gpt-4o-mini', api_base=stub). Transfers: ADK's transfer_to_agent({'agent_name': ...}) both ways, "
               "the task/report as text beside the call. Limit: RunConfig(max_llm_calls=LIMIT) for team_limit "
               f"(LlmCallsLimitExceededError), max_llm_calls={ROOMY} elsewhere. dropped_context: "
               "include_contents='none' on the operator. Content: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="
               "SPAN_ONLY; no-content: NO_CONTENT and ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=false. "
               "include_contents='none' keeps the current turn from the latest non-transfer event of another agent: "
               "the operator's first request holds the coordinator's get_logs result and its transfer message "
               "(quoted as 'For context: [coordinator] ...' user messages), not the user's task nor get_pods. "
               "Spans: root 'invoke_workflow coordinator' (gen_ai.operation.name invoke_workflow, "
               "gen_ai.workflow.name = the root agent) > one 'invoke_agent <name>' span per activation "
               "(gen_ai.agent.name, gen_ai.agent.description), siblings in order, not nested; each > "
               "'generate_content openai/gpt-4o-mini' (gen_ai.agent.name too) and 'execute_tool <tool>' "
               "(gen_ai.tool.name, gen_ai.tool.type FunctionTool, gen_ai.agent.name, gen_ai.tool.call.id). A transfer "
               "is 'execute_tool transfer_to_agent' (gen_ai.tool.type TransferToAgentTool) whose "
               "gen_ai.tool.call.arguments {\"agent_name\": target} and result {\"result\": null} are content: "
               "without content the target is only the next invoke_agent span. All spans share "
               "gen_ai.conversation.id (the session id). With content, generate_content carries "
               "gen_ai.system_instructions (the agent's instruction plus ADK's transfer instructions), "
               "gen_ai.input.messages (other agents' turns rewritten as 'For context: [agent] said/called/returned' "
               "user messages), gen_ai.output.messages, gen_ai.tool.definitions; a worker's report is its text "
               "beside transfer_to_agent in gen_ai.output.messages and reaches the coordinator as a quoted "
               "'[operator] said:' user message. Limit: LlmCallsLimitExceededError ('Max number of llm calls limit "
               "of `8` exceeded') as status ERROR plus an exception event on the running invoke_agent span and on "
               "invoke_workflow. A tool result dict with an 'error' key (the refused restart) makes its execute_tool "
               "span status ERROR 'TOOL_ERROR' with error.type TOOL_ERROR, with or without content."),
    )


if __name__ == "__main__":
    main()
