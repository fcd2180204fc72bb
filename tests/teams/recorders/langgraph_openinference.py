"""LangGraph supervisor team (langgraph-supervisor's ``create_supervisor``) through OpenInference.

Tracing as the OpenInference docs show a new user: ``LangChainInstrumentor().instrument(tracer_provider=provider)``
(default TraceConfig); one trace per team run. The team (shared with the OpenLLMetry recorder) is
``langgraph_team``'s: a ``create_supervisor`` graph whose supervisor is the coordinator, with
``create_agent`` workers operator and verifier that hand back automatically (topology "delegation").
Team limit: ``recursion_limit=LIMIT`` on the team graph (GraphRecursionError). Content off:
``OPENINFERENCE_HIDE_INPUTS``/``OPENINFERENCE_HIDE_OUTPUTS``. What it cannot express: nothing of the
scenarios; a handoff tool carries no message of its own (the instruction is the coordinator's text).
"""
import os

from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.recorders import langgraph_team


def main() -> None:
    args = arguments()
    if args.no_content:  # OpenInference's documented switches, read when the instrumentor starts
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
        os.environ["OPENINFERENCE_HIDE_OUTPUTS"] = "true"
    provider, exporter = tracer_provider()
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=provider)

    record_team(framework="langgraph-openinference", instrumentation="openinference-instrumentation-langchain",
                packages=["langchain", "langchain-core", "langgraph", "langgraph-supervisor", "langchain-openai",
                          "openai", "openinference-instrumentation-langchain", "opentelemetry-sdk"],
                run=langgraph_team.runner(), delegate=langgraph_team.delegate, exporter=exporter,
                provider=provider, args=args, topology="delegation", notes=langgraph_team.NOTES + NOTES)


NOTES = (
    " Spans (OpenInference, one trace per run): root CHAIN 'sre-team' (the compiled team graph); per team superstep a "
    "CHAIN span named after the node ('coordinator', 'operator', 'verifier'; metadata JSON langgraph_node/"
    "langgraph_step). Coordinator: node CHAIN 'coordinator' > CHAIN 'coordinator' (its create_react_agent graph) > "
    "AGENT 'agent' (model node: call_model, RunnableSequence > Prompt, LLM 'ChatOpenAI', should_continue) and CHAIN "
    "'tools' > TOOL spans (cluster tools, transfer_to_operator/transfer_to_verifier). Worker: node CHAIN 'operator' > "
    "AGENT 'call_agent' (the supervisor's wrapper; input.value the shared history, output.value its last message + "
    "the transfer_back pair) > CHAIN 'operator' (the create_agent graph, metadata lc_agent_name=operator) > CHAIN "
    "'model' > LLM 'ChatOpenAI' and CHAIN 'tools' > TOOL spans; every span inside a worker carries metadata "
    "lc_agent_name, the coordinator's spans carry no agent name but langgraph_node='coordinator' on the outer two. "
    "So agent names are span names of CHAIN node spans / the metadata JSON, the AGENT kind is on 'agent' and "
    "'call_agent' (not named after the agent). Handoff: TOOL span 'transfer_to_<agent>' (tool.name; metadata "
    "__handoff_destination=<agent>; with content output.value is the Command JSON with goto=<agent>), its parents "
    "'tools' and both 'coordinator' spans get an exception event langgraph.errors.ParentCommand with status OK "
    "(control flow, not a failure); its exception.message is the Command repr, quoting the conversation's "
    "messages even with content capture off. The hand-back is not a span: the transfer_back_to_coordinator AI/tool messages "
    "appear only in the next coordinator LLM span's input messages (name=operator on the worker's report). Limit: "
    "only the root 'sre-team' span has STATUS_CODE_ERROR 'GraphRecursionError(Recursion limit of 8 reached ...' and "
    "an exception event (exception.type langgraph.errors.GraphRecursionError), with and without content. No content: "
    "input/output values and llm.input/output_messages are gone; span names, kinds, tool.name, metadata (node names, "
    "lc_agent_name, __handoff_destination), token counts and finish reasons stay. With content the SDK's default "
    "128-attribute limit drops the oldest input-message attributes of the coordinator's last LLM span in "
    "progress_handoffs ('Attributes dict is full').")

if __name__ == "__main__":
    main()
