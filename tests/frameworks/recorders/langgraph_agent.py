"""The LangGraph agent both LangGraph recorders run: ``langchain.agents.create_agent``, the entry point
the LangChain/LangGraph v1 docs show a new user (``langgraph.prebuilt.create_react_agent`` is
deprecated in its favour since LangGraph 1.0), compiled as a graph with a ``model`` and a ``tools``
node. Only the tracing differs between the two recorders.
"""

from tests.frameworks.harness.scenarios import HISTORY_KEEP, HISTORY_TRIGGER, INSTRUCTIONS, LIMIT, TASK


def runner():
    """The ``run(scenario, stub, cluster)`` function for ``record_all`` (imports LangChain once instrumented)."""
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

    return run
