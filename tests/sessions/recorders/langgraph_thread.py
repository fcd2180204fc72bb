"""The LangGraph conversation both LangGraph session recorders run: a thread of a checkpointed agent.

``langchain.agents.create_agent`` (a LangGraph graph) compiled with a checkpointer (``InMemorySaver``,
the in-memory one the LangGraph docs start with); each turn is
``agent.invoke({"messages": [new user message]}, config={"configurable": {"thread_id": ...}})`` and the
checkpointer brings back the thread's earlier messages. The app that drops the history passes the same
``thread_id`` to an agent compiled without a checkpointer (the setup step it forgot). Only the tracing
differs between the recorders.
"""

from tests.sessions.harness.scenarios import INSTRUCTIONS


def start(scenario, stub, cluster, session_id):
    """The ``start`` function for ``record_sessions`` (imports LangChain once instrumented)."""
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    model = ChatOpenAI(base_url=stub.base_url, api_key="x", model="gpt-4o-mini")
    agent = create_agent(model, tools=[cluster.get_pods], system_prompt=INSTRUCTIONS, name="sre-assistant",
                         checkpointer=InMemorySaver() if scenario.history else None)
    config = {"configurable": {"thread_id": session_id}}

    def send(text):
        state = agent.invoke({"messages": [{"role": "user", "content": text}]}, config=config)
        return state["messages"][-1].content

    return send


NOTES = ("Conversation: create_agent(..., checkpointer=InMemorySaver()) and invoke(new message, "
         "config={'configurable': {'thread_id': <session id>}}) per turn. History dropped: the same call on an agent "
         "compiled without a checkpointer. Tool: get_pods only.")
