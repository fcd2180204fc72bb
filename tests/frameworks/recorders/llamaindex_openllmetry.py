"""LlamaIndex ReActAgent through OpenLLMetry (opentelemetry-instrumentation-llamaindex).

Tracing: the plain ``LlamaIndexInstrumentor().instrument(tracer_provider=provider)`` (default options),
not traceloop-sdk. The agent is ``llama_index.core.agent.workflow.ReActAgent`` with
``FunctionTool.from_defaults(fn=...)`` tools and ``OpenAILike`` on the stub, which answers in the
ReAct text dialect (``Thought`` / ``Action`` / ``Action Input``, then ``Answer``). OpenLLMetry writes
every call as a ``traceloop.span.kind=task`` span. Content off: ``TRACELOOP_TRACE_CONTENT=false``.
"""
import asyncio
import os

from tests.frameworks.harness.recording import arguments, record_all, tracer_provider
from tests.frameworks.harness.scenarios import INSTRUCTIONS, LIMIT, TASK


def main() -> None:
    args = arguments()
    if args.no_content:
        os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
    provider, exporter = tracer_provider()
    from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument(tracer_provider=provider)

    from llama_index.core.agent.workflow import ReActAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai_like import OpenAILike

    def run(scenario, stub, cluster):
        llm = OpenAILike(api_base=stub.base_url, api_key="x", model="gpt-4o-mini", is_chat_model=True)
        agent = ReActAgent(name="sre-agent", description="Diagnoses and fixes Kubernetes incidents.",
                           system_prompt=INSTRUCTIONS, llm=llm,
                           tools=[FunctionTool.from_defaults(fn=tool) for tool in cluster.tools()])

        async def go():
            return await agent.run(user_msg=TASK, max_iterations=LIMIT)

        return asyncio.run(go())

    record_all(framework="llamaindex-openllmetry", instrumentation="opentelemetry-instrumentation-llamaindex (OpenLLMetry)",
               packages=["llama-index-core", "llama-index-llms-openai-like", "llama-index-llms-openai",
                         "llama-index-workflows", "openai", "opentelemetry-instrumentation-llamaindex",
                         "opentelemetry-sdk"],
               run=run, exporter=exporter, provider=provider, args=args, dialect="react",
               cannot={"history": "no hook for the messages a model call is sent within a run (as for FunctionAgent: "
                                  "the run's reasoning lives in a per-run scratchpad, not the trimmed memory)"},
               notes="Agent: ReActAgent(name='sre-agent') run as agent.run(user_msg=TASK, max_iterations=LIMIT); the stub "
                     "answers in ReAct text (no tool calls in the API sense). Limit: max_iterations=LIMIT raises "
                     "WorkflowRuntimeError on the LIMIT-th model call. No content: TRACELOOP_TRACE_CONTENT=false. "
                     "Tracing: the plain LlamaIndexInstrumentor (default options), not traceloop-sdk.")


if __name__ == "__main__":
    main()
