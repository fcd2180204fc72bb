"""LangGraph threads (a checkpointer and ``thread_id``) through OpenInference.

The agent is ``langchain.agents.create_agent`` (a LangGraph graph) compiled with a checkpointer
(``InMemorySaver``, the in-memory one the LangGraph docs start with); each turn is
``agent.invoke({"messages": [new user message]}, config={"configurable": {"thread_id": ...}})``,
and the checkpointer brings back the thread's earlier messages. LangGraph copies ``thread_id`` into
the run's metadata, where OpenInference reads it as ``session.id``. The app that drops the history
passes the same ``thread_id`` to an agent compiled without a checkpointer (the setup step it
forgot): the same session id on the spans, no history in the requests.
"""

import os

from tests.sessions.harness.recording import arguments, record_sessions, tracer_provider
from tests.sessions.harness.scenarios import INSTRUCTIONS


def main() -> None:
    args = arguments()
    if args.no_content:  # OpenInference's documented switches, read when the instrumentor starts
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)

    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    def start(scenario, stub, cluster, session_id):
        model = ChatOpenAI(base_url=stub.base_url, api_key="x", model="gpt-4o-mini")
        agent = create_agent(model, tools=[cluster.get_pods], system_prompt=INSTRUCTIONS, name="sre-assistant",
                             checkpointer=InMemorySaver() if scenario.history else None)
        config = {"configurable": {"thread_id": session_id}}

        def send(text):
            state = agent.invoke({"messages": [{"role": "user", "content": text}]}, config=config)
            return state["messages"][-1].content

        return send

    record_sessions(
        framework="langgraph-openinference", instrumentation="openinference-instrumentation-langchain",
        packages=["langchain", "langchain-core", "langgraph", "langchain-openai", "openai",
                  "openinference-instrumentation-langchain", "opentelemetry-sdk"],
        start=start, exporter=exporter, provider=provider, args=args, session_attribute="session.id",
        notes=("Conversation: create_agent(..., checkpointer=InMemorySaver()) and invoke(new message, "
               "config={'configurable': {'thread_id': <session id>}}) per turn; OpenInference writes the thread_id "
               "LangGraph puts in the run metadata as session.id. History dropped: the same call on an agent "
               "compiled without a checkpointer. Tool: get_pods only. No content: "
               "OPENINFERENCE_HIDE_INPUTS/OPENINFERENCE_HIDE_OUTPUTS=true."),
    )


if __name__ == "__main__":
    main()
