"""LlamaIndex AgentWorkflow (multi-agent handoff) through OpenLLMetry (opentelemetry-instrumentation-llamaindex).

Tracing: the plain ``LlamaIndexInstrumentor().instrument(tracer_provider=provider)`` (default options),
as in the framework corpus' LlamaIndex recording. Primitive: ``AgentWorkflow(agents=[coordinator,
operator, verifier], root_agent="coordinator")`` of ``FunctionAgent``s over ``OpenAILike`` on the stub;
each agent's ``can_handoff_to`` gives the workflow's ``handoff`` tool (``to_agent``, ``reason``): the
coordinator can hand to the operator and the verifier, they hand back to the coordinator with their report
as the reason (topology "transfer"). The agents share one memory, so a receiver sees the whole
conversation. Team limit: ``run(max_iterations=LIMIT)`` counts every agent's model calls in the run and
raises ``WorkflowRuntimeError``; other scenarios run with ``max_iterations=ROOMY``. Content off:
``TRACELOOP_TRACE_CONTENT=false``. Cannot express dropped_context: the agents share one memory and a
handoff has no filter, so no transfer can drop the conversation.
"""

import asyncio
import os

from tests.frameworks.harness.stub_model import Call
from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.harness.scenarios import AGENTS, COORDINATOR, DESCRIPTIONS, INSTRUCTIONS, LIMIT, TASK, tools_of

ROOMY = 40  # max_iterations for scenarios that do not test the limit (the longest script has 17 model calls)


def delegate(source: str, target: str, message: str) -> Call:
    """AgentWorkflow's ``handoff`` tool: the target agent's name and the task (or report) as the reason."""
    return Call("handoff", {"to_agent": target, "reason": message})


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
    provider, exporter = tracer_provider()
    from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument(tracer_provider=provider)

    from llama_index.core.agent.workflow import AgentWorkflow, FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai_like import OpenAILike

    def run(scenario, stub, cluster):
        llm = OpenAILike(api_base=stub.base_url, api_key="x", model="gpt-4o-mini", is_chat_model=True,
                         is_function_calling_model=True)
        handoffs = {name: ([a for a in AGENTS if a != COORDINATOR] if name == COORDINATOR else [COORDINATOR])
                    for name in AGENTS}
        agents = [FunctionAgent(name=name, description=DESCRIPTIONS[name], system_prompt=INSTRUCTIONS[name], llm=llm,
                                tools=[FunctionTool.from_defaults(fn=t) for t in tools_of(name, cluster)],
                                can_handoff_to=handoffs[name])
                  for name in AGENTS]
        workflow = AgentWorkflow(agents=agents, root_agent=COORDINATOR)
        iterations = LIMIT if "limit" in scenario.needs else ROOMY

        async def go():
            return await workflow.run(user_msg=TASK, max_iterations=iterations)

        return asyncio.run(go())

    record_team(
        framework="llamaindex-openllmetry",
        instrumentation="opentelemetry-instrumentation-llamaindex (OpenLLMetry, LlamaIndexInstrumentor)",
        packages=["llama-index-core", "llama-index-llms-openai-like", "llama-index-llms-openai",
                  "llama-index-workflows", "openai", "opentelemetry-instrumentation-llamaindex", "opentelemetry-sdk"],
        run=run, delegate=delegate, exporter=exporter, provider=provider, args=args, topology="transfer",
        cannot={"dropped_context": "AgentWorkflow's agents share one memory and its handoff tool has no input "
                                   "filter, so no transfer can drop the conversation its receiver keeps"},
        notes=("AgentWorkflow(agents=[coordinator, operator, verifier], root_agent='coordinator') of FunctionAgents "
               "(name = role, description=DESCRIPTIONS, system_prompt=INSTRUCTIONS, FunctionTool.from_defaults over "
               "the cluster tools) on OpenAILike(is_function_calling_model=True). can_handoff_to: coordinator -> "
               "operator, verifier; operator, verifier -> coordinator. The model hands off with the workflow's "
               "'handoff' tool {'to_agent': <name>, 'reason': <task or report>}; the coordinator's text answer ends "
               f"the run. Limit: run(max_iterations=LIMIT) for team_limit (WorkflowRuntimeError), {ROOMY} elsewhere. "
               "No content: TRACELOOP_TRACE_CONTENT=false."))


if __name__ == "__main__":
    main()
