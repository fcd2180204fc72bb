"""LangGraph agent (langchain.agents.create_agent) through OpenInference: how a new user sets up tracing per its docs.

The agent is ``langgraph_agent``'s (shared with the other LangGraph recorder). Tracing follows the OpenInference
docs: ``LangChainInstrumentor().instrument(tracer_provider=provider)``.
"""
import os

from tests.frameworks.harness.recording import arguments, record_all, tracer_provider
from tests.frameworks.recorders import langgraph_agent


def main() -> None:
    args = arguments()
    if args.no_content:  # OpenInference's documented switches, read when the instrumentor starts
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)

    run = langgraph_agent.runner()

    record_all(framework="langgraph-openinference", instrumentation="openinference-instrumentation-langchain",
               packages=["langchain", "langchain-core", "langgraph", "langchain-openai", "openai",
                         "openinference-instrumentation-langchain", "opentelemetry-sdk"],
               run=run, exporter=exporter, provider=provider, args=args,
               notes="Agent: langchain.agents.create_agent(name='sre-agent') (LangGraph graph; create_react_agent is "
                     "deprecated). Limit: config={'recursion_limit': supersteps up to the LIMIT-th model call} (15 = 2*LIMIT-1; more with the trim hook's nodes), "
                     "raising GraphRecursionError after the LIMIT-th model call. History: a @before_model middleware "
                     "(the docs' trim-messages pattern, RemoveMessage(REMOVE_ALL_MESSAGES)) keeping the last "
                     "HISTORY_KEEP messages once messages + system prompt exceed HISTORY_TRIGGER. Tool exceptions: "
                     "default create_agent behaviour (no ToolErrorMiddleware), so the exception propagates and ends "
                     "the run. No content: OPENINFERENCE_HIDE_INPUTS/OPENINFERENCE_HIDE_OUTPUTS=true.")


if __name__ == "__main__":
    main()
