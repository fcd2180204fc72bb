"""Strands Agents (1.62) ``Swarm``: three Agents that pass control with the swarm's ``handoff_to_agent`` tool.

Tracing, as Strands' docs set it up: a global tracer provider configured before the agents are
built is used automatically (native GenAI spans, default conventions); the swarm run is one
``invoke_swarm`` span with the agents' ``invoke_agent`` spans inside, so it is one trace already.

Primitive: ``Swarm([coordinator, operator, verifier], entry_point=coordinator)``. The swarm injects
``handoff_to_agent(agent_name, message, context=None)`` into every agent; a handoff is that call
with ``{"agent_name": target, "message": message}``. A node that ends without handing off ends the
swarm, so a worker's report goes back as a handoff to the coordinator whose ``message`` is the
report. The agent keeps running after it called ``handoff_to_agent`` (the handoff only takes effect
when its turn ends), so a real model writes one more, short, text answer after the handoff's
result: the stub says so ("Handed off to <agent>.") outside the agent's script (see ``_after_handoff``).
Team limit: ``Swarm(max_handoffs=LIMIT, max_iterations=LIMIT)`` (both count node executions; the
swarm stops with status FAILED, no exception). dropped_context: nothing to configure, a Strands
handoff never carries the conversation: every node execution starts from the agent's initial
messages plus a "Context:" text (handoff message, user request, agents so far, the ``context``
dicts handed over, the other agents), so the coordinator's own tool results never reach the operator.
Content off: ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_unredacted_attributes=`` (Strands' redaction
allow-list, empty: every sensitive attribute is redacted).
"""

import json
import os

from tests.frameworks.harness.stub_model import Answer, Call
from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.harness.scenarios import AGENTS, COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, TASK, tools_of
from tests.teams.harness.team_model import asking_agent

HANDOFF = "handoff_to_agent"


def delegate(source: str, target: str, message: str) -> Call:
    return Call(HANDOFF, {"agent_name": target, "message": message})


def _after_handoff(stub) -> None:
    """The model's turn right after its handoff_to_agent call returned: a short text, not a script step.

    Strands lets the agent loop on after the handoff tool; the swarm moves on once the agent stops.
    A real model closes its turn with a line of text here, so the stub does too, without consuming
    the agent's script (the call is still counted in ``asked_by``)."""
    if getattr(stub, "_after_handoff", False):
        return
    scripted = stub.next_action

    def next_action(body):
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        if messages and messages[-1].get("role") == "tool":
            calls = {c.get("id"): c.get("function", {}) for m in messages if m.get("role") == "assistant"
                     for c in m.get("tool_calls") or []}
            called = calls.get(messages[-1].get("tool_call_id"), {})
            if called.get("name") == HANDOFF:
                stub.asked_by.append(asking_agent(body))
                target = json.loads(called.get("arguments") or "{}").get("agent_name")
                return Answer(f"Handed off to {target}.")
        return scripted(body)

    stub.next_action = next_action
    stub._after_handoff = True


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_unredacted_attributes="
    provider, exporter = tracer_provider()  # the global provider, set before strands creates its tracer

    from strands import Agent, tool
    from strands.models.openai import OpenAIModel
    from strands.multiagent import Swarm

    def run(scenario, stub, cluster):
        _after_handoff(stub)
        model = OpenAIModel(client_args={"base_url": stub.base_url, "api_key": "x"}, model_id="gpt-4o-mini")
        agents = {name: Agent(name=name, description=DESCRIPTIONS[name], model=model, system_prompt=INSTRUCTIONS[name],
                              tools=[tool(fn) for fn in tools_of(name, cluster)], callback_handler=None)
                  for name in AGENTS}
        limits = {"max_handoffs": LIMIT, "max_iterations": LIMIT} if "limit" in scenario.needs else {}
        swarm = Swarm(list(agents.values()), entry_point=agents[COORDINATOR], **limits)
        result = swarm(TASK)
        print(f"  status {result.status}, nodes {[n.node_id for n in result.node_history]}")
        return result

    record_team(
        framework="strands", topology="transfer", delegate=delegate, run=run, exporter=exporter, provider=provider,
        args=args, instrumentation="strands-agents native OpenTelemetry (strands.telemetry.tracer, default conventions)",
        packages=["strands-agents", "openai", "opentelemetry-sdk", "opentelemetry-api"],
        notes=NOTES,
    )


NOTES = (
    "Swarm(coordinator, operator, verifier; entry_point=coordinator), Agent(name, description, system_prompt="
    "INSTRUCTIONS[name]); max_handoffs=max_iterations=LIMIT only for team_limit (defaults 20 otherwise). Extra model "
    "calls: after every handoff_to_agent result the agent is asked once more; the stub answers 'Handed off to "
    "<agent>.' outside the script (counted in asked_by), so every node execution ends with that line and the "
    "scripts play out in order. Spans: one trace; 'invoke_swarm' (gen_ai.operation.name invoke_swarm, "
    "gen_ai.system strands-agents, the task as a gen_ai.user.message event; no agent name, no output, no status) > "
    "one 'invoke_agent <name>' per node execution (gen_ai.agent.name, gen_ai.agent.tools incl. handoff_to_agent, "
    "usage; events gen_ai.system.message = INSTRUCTIONS, gen_ai.user.message = the swarm's 'Context:' text, "
    "gen_ai.choice = the agent's last text) > 'execute_event_loop_cycle' (event_loop.cycle_id, "
    "event_loop.parent_cycle_id, which chains across agents: an agent's first cycle names the previous agent's "
    "cycle as parent) > 'chat' (model call; events with the messages sent and the choice) and 'execute_tool "
    "<tool>' (gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.status; arguments in a gen_ai.tool.message "
    "event, result in a gen_ai.choice event). invoke_agent spans are siblings under invoke_swarm. Handoff: "
    "'execute_tool handoff_to_agent' inside the source's invoke_agent; the target and message are only in its "
    "arguments event ({agent_name, message}) and result ('Handing off to <target>: <message>'), and the next "
    "invoke_agent span is the target's. Every node execution starts from the agent's initial messages: the "
    "receiver's only input is one user message 'Context:\\nHandoff Message: <message>\\n\\nUser Request: <task>\\n\\n"
    "Previous agents who worked on this: a -> b ...\\n\\nOther agents available ...'; a worker's report comes back "
    "to the coordinator that way (its handoff message). So a Strands handoff never carries the conversation, in "
    "every scenario; dropped_context uses the default handoff. Team limit: the swarm stops before the 9th node "
    "(SwarmResult.status FAILED, no exception); no span says so (invoke_swarm ends with status unset, no error "
    "attribute); the last span is the operator's execute_tool get_logs / its invoke_agent. The scenario's operator "
    "calls check_health, which tools_of does not give it: Strands answers with an error tool result and an "
    "'execute_tool check_health' span with status ERROR 'Unknown tool: check_health'. No-content (OTEL_SEMCONV_STABILITY_OPT_IN="
    "gen_ai_unredacted_attributes=): same spans, every message/choice/tool argument/result event value is "
    "'[REDACTED]', so the handoff's target agent is only known from the next invoke_agent's gen_ai.agent.name."
)

if __name__ == "__main__":
    main()
