"""LangGraph threads (a checkpointer and ``thread_id``, see ``langgraph_thread``) through OpenInference.

LangGraph copies ``thread_id`` into the run's metadata, where OpenInference reads it as ``session.id``.
"""

import os

from tests.sessions.harness.recording import arguments, record_sessions, tracer_provider
from tests.sessions.recorders import langgraph_thread


def main() -> None:
    args = arguments()
    if args.no_content:  # OpenInference's documented switches, read when the instrumentor starts
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)

    record_sessions(
        framework="langgraph-openinference", instrumentation="openinference-instrumentation-langchain",
        packages=["langchain", "langchain-core", "langgraph", "langchain-openai", "openai",
                  "openinference-instrumentation-langchain", "opentelemetry-sdk"],
        start=langgraph_thread.start, exporter=exporter, provider=provider, args=args, session_attribute="session.id",
        notes=(langgraph_thread.NOTES + " OpenInference writes the thread_id LangGraph puts in the run metadata as "
               "session.id. No content: OPENINFERENCE_HIDE_INPUTS/OPENINFERENCE_HIDE_OUTPUTS=true."),
    )


if __name__ == "__main__":
    main()
