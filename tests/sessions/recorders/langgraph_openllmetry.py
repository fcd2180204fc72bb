"""LangGraph threads (a checkpointer and ``thread_id``, see ``langgraph_thread``) through OpenLLMetry.

The standalone instrumentation (``opentelemetry-instrumentation-langchain``, without the traceloop-sdk),
as the framework corpus sets it up. It writes the thread as ``gen_ai.conversation.id`` on the
``invoke_agent`` root span only, and copies the run's metadata, ``thread_id`` included, into
``traceloop.association.properties.*`` on every span.
"""

import os

from tests.sessions.harness.recording import arguments, record_sessions, tracer_provider
from tests.sessions.recorders import langgraph_thread


def main() -> None:
    args = arguments()
    if args.no_content:  # OpenLLMetry's documented switch
        os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
    provider, exporter = tracer_provider()
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    LangchainInstrumentor().instrument(tracer_provider=provider)

    record_sessions(
        framework="langgraph-openllmetry",
        instrumentation="opentelemetry-instrumentation-langchain (OpenLLMetry, no traceloop-sdk)",
        packages=["langchain", "langchain-core", "langgraph", "langchain-openai", "openai",
                  "opentelemetry-instrumentation-langchain", "opentelemetry-semantic-conventions-ai",
                  "opentelemetry-sdk"],
        start=langgraph_thread.start, exporter=exporter, provider=provider, args=args,
        session_attribute="gen_ai.conversation.id",
        notes=(langgraph_thread.NOTES + " OpenLLMetry writes the thread_id as gen_ai.conversation.id on the "
               "invoke_agent root span only, and as traceloop.association.properties.thread_id on every span. "
               "create_agent exports a trace of its own (setup_trace_ids). No content: TRACELOOP_TRACE_CONTENT=false."),
    )


if __name__ == "__main__":
    main()
