"""LlamaIndex FunctionAgent through OpenInference: how a new user sets up tracing per its docs.

Tracing follows the LlamaIndex/OpenInference docs: ``LlamaIndexInstrumentor().instrument(tracer_provider=provider)``.
The agent is ``llama_index.core.agent.workflow.FunctionAgent`` (the documented agent since the
workflow rewrite) with ``FunctionTool.from_defaults(fn=...)`` tools and ``OpenAILike`` on the stub.
"""
import asyncio
import os

from tests.frameworks.harness.recording import arguments, record_all, tracer_provider
from tests.frameworks.harness.scenarios import INSTRUCTIONS, LIMIT, TASK


def main() -> None:
    args = arguments()
    if args.no_content:  # OpenInference's documented switches, read when the instrumentor starts
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument(tracer_provider=provider)

    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.llms.openai_like import OpenAILike

    def run(scenario, stub, cluster):
        llm = OpenAILike(api_base=stub.base_url, api_key="x", model="gpt-4o-mini",
                         is_chat_model=True, is_function_calling_model=True)
        agent = FunctionAgent(name="sre-agent", description="Diagnoses and fixes Kubernetes incidents.",
                              system_prompt=INSTRUCTIONS, llm=llm,
                              tools=[FunctionTool.from_defaults(fn=tool) for tool in cluster.tools()])

        async def go():
            # max_iterations counts model calls; the LIMIT-th raises WorkflowRuntimeError.
            return await agent.run(user_msg=TASK, max_iterations=LIMIT)

        return asyncio.run(go())

    record_all(framework="llamaindex", instrumentation="openinference-instrumentation-llama-index",
               packages=["llama-index-core", "llama-index-llms-openai-like", "llama-index-llms-openai",
                         "llama-index-workflows", "openai", "openinference-instrumentation-llama-index",
                         "opentelemetry-sdk"],
               run=run, exporter=exporter, provider=provider, args=args,
               cannot={"history": "no hook for the messages a model call is sent: FunctionAgent sends system prompt + "
                                  "memory.aget() + a per-run scratchpad (ctx.store 'scratchpad') holding this run's "
                                  "assistant/tool messages, which reach the memory only when the run ends; the memory "
                                  "(ChatMemoryBuffer/Memory, trimmed by tokens) holds only earlier turns and the user "
                                  "message, so only subclassing FunctionAgent.take_step could trim within a run"},
               notes="Agent: FunctionAgent(name='sre-agent') run as agent.run(user_msg=TASK, max_iterations=LIMIT) "
                     "(streaming model calls, the FunctionAgent default). Limit: max_iterations=LIMIT counts model "
                     "calls and raises WorkflowRuntimeError('Max iterations of 8 reached! ...') on the LIMIT-th "
                     "(early_stopping_method default 'force'). History: cannot (see cannot_express). Tool "
                     "exceptions are caught by the agent and returned to the model as an error ToolOutput. "
                     "No content: OPENINFERENCE_HIDE_INPUTS/OPENINFERENCE_HIDE_OUTPUTS=true.")


if __name__ == "__main__":
    main()
