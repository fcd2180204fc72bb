"""LangGraph agent (langchain.agents.create_agent) through OpenLLMetry: how a new user sets up tracing per its docs.

The agent is the one the LangChain/LangGraph v1 docs show a new user: ``langchain.agents.create_agent``
(``langgraph.prebuilt.create_react_agent`` is deprecated in its favour since LangGraph 1.0), compiled
as a LangGraph graph with a ``model`` node and a ``tools`` node. Tracing follows the OpenLLMetry
docs for the standalone instrumentation (``opentelemetry-instrumentation-langchain``, without the
traceloop-sdk, which sends telemetry of its own): ``LangchainInstrumentor().instrument(tracer_provider=provider)``.
"""
import os

from tests.frameworks.harness.recording import arguments, record_all, tracer_provider
from tests.frameworks.harness.scenarios import HISTORY_KEEP, HISTORY_TRIGGER, INSTRUCTIONS, LIMIT, TASK


def main() -> None:
    args = arguments()
    if args.no_content:  # OpenLLMetry's documented switch
        os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
    provider, exporter = tracer_provider()
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    LangchainInstrumentor().instrument(tracer_provider=provider)

    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentState, before_model
    from langchain_core.messages import RemoveMessage
    from langchain_openai import ChatOpenAI
    from langgraph.graph.message import REMOVE_ALL_MESSAGES

    @before_model
    def trim_history(state: AgentState, runtime) -> dict | None:
        """The docs' "trim messages" middleware: system prompt + the last HISTORY_KEEP messages."""
        messages = state["messages"]
        if len(messages) + 1 <= HISTORY_TRIGGER:  # + 1: the system prompt is sent with them
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages[-HISTORY_KEEP:]]}

    def recursion_limit(agent) -> int:
        """Supersteps up to and including the LIMIT-th model call, so GraphRecursionError follows it.

        Every graph node is one superstep: ``model`` and ``tools`` per round (15 for LIMIT = 8), plus
        any middleware hook nodes (``<middleware>.before_model`` etc.; ``.before_agent`` runs once)."""
        nodes = [n for n in agent.nodes if not n.startswith("__")]
        once = [n for n in nodes if n.endswith(".before_agent")]
        loop = [n for n in nodes if n not in once and not n.endswith(".after_agent")]
        before_model = [n for n in loop if n.endswith(".before_model")]
        return len(once) + len(loop) * (LIMIT - 1) + len(before_model) + 1

    def run(scenario, stub, cluster):
        model = ChatOpenAI(base_url=stub.base_url, api_key="x", model="gpt-4o-mini")
        history = scenario.name == "history"
        agent = create_agent(model, tools=cluster.tools(), system_prompt=INSTRUCTIONS, name="sre-agent",
                             middleware=[trim_history] if history else [])
        agent.invoke({"messages": [{"role": "user", "content": TASK}]},
                     config={"recursion_limit": recursion_limit(agent)})

    record_all(framework="langgraph-openllmetry", instrumentation="opentelemetry-instrumentation-langchain (OpenLLMetry, no traceloop-sdk)",
               packages=["langchain", "langchain-core", "langgraph", "langchain-openai", "openai",
                         "opentelemetry-instrumentation-langchain", "opentelemetry-semantic-conventions-ai",
                         "opentelemetry-sdk"],
               run=run, exporter=exporter, provider=provider, args=args,
               notes="Agent: langchain.agents.create_agent(name='sre-agent') (LangGraph graph; create_react_agent is "
                     "deprecated). Limit: config={'recursion_limit': supersteps up to the LIMIT-th model call} (15 = 2*LIMIT-1; more with the trim hook's nodes), "
                     "raising GraphRecursionError after the LIMIT-th model call. History: a @before_model middleware "
                     "(the docs' trim-messages pattern, RemoveMessage(REMOVE_ALL_MESSAGES)) keeping the last "
                     "HISTORY_KEEP messages once messages + system prompt exceed HISTORY_TRIGGER. Tool exceptions: "
                     "default create_agent behaviour (no ToolErrorMiddleware), so the exception propagates and ends "
                     "the run. No content: TRACELOOP_TRACE_CONTENT=false. Tracing: the plain LangchainInstrumentor (default options), not traceloop-sdk.")


if __name__ == "__main__":
    main()
