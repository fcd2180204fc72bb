"""LangGraph supervisor team (langgraph-supervisor's ``create_supervisor``) through OpenLLMetry.

Tracing as OpenLLMetry's docs show for the standalone instrumentation (``opentelemetry-instrumentation-langchain``,
without the traceloop-sdk, which sends telemetry of its own): ``LangchainInstrumentor().instrument(tracer_provider=
provider)``; one trace per team run. The team is ``langgraph_team``'s (shared with the OpenInference recorder): a
``create_supervisor`` graph whose supervisor is the coordinator, ``create_agent`` workers operator and verifier
that hand back automatically (topology "delegation"). Team limit: ``recursion_limit=LIMIT`` on the team graph
(GraphRecursionError). Content off: ``TRACELOOP_TRACE_CONTENT=false``. What it cannot express: nothing of the
scenarios; a handoff tool carries no message of its own (the instruction is the coordinator's text).
"""
import os

from tests.teams.harness.recording import arguments, record_team, tracer_provider
from tests.teams.recorders import langgraph_team


def main() -> None:
    args = arguments()
    if args.no_content:  # OpenLLMetry's documented switch
        os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
    provider, exporter = tracer_provider()
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    LangchainInstrumentor().instrument(tracer_provider=provider)

    record_team(framework="langgraph-openllmetry",
                instrumentation="opentelemetry-instrumentation-langchain (OpenLLMetry, no traceloop-sdk)",
                packages=["langchain", "langchain-core", "langgraph", "langgraph-supervisor", "langchain-openai",
                          "openai", "opentelemetry-instrumentation-langchain", "opentelemetry-semantic-conventions-ai",
                          "opentelemetry-sdk"],
                run=langgraph_team.runner(), delegate=langgraph_team.delegate, exporter=exporter,
                provider=provider, args=args, topology="delegation", notes=langgraph_team.NOTES + NOTES)


NOTES = (
    " Spans (OpenLLMetry 0.62, gen_ai semconv): FOUR traces per file: one single-span trace 'create_agent <name>' "
    "(gen_ai.operation.name create_agent, gen_ai.agent.name, gen_ai.system_instructions, gen_ai.tool.definitions) "
    "for each of operator, verifier, coordinator, emitted when the graphs are built, outside the run; and the run's "
    "trace: root 'invoke_agent sre-team' (gen_ai.agent.name=sre-team, gen_ai.workflow.nodes/edges of the team "
    "graph) > 'sre-team.workflow' (traceloop.span.kind workflow) > per superstep 'execute_task <node>' "
    "(traceloop.span.kind task, gen_ai.task.name, traceloop.association.properties.langgraph_node). Coordinator turn: "
    "'execute_task coordinator' > 'invoke_agent coordinator' (gen_ai.agent.name=coordinator, workflow nodes "
    "agent/tools; a leaf sibling, not the parent of the turn's spans) and 'execute_task coordinator' > 'execute_task "
    "agent' > call_model/RunnableSequence > Prompt, 'ChatOpenAI.chat' (CLIENT, gen_ai.operation.name chat, "
    "gen_ai.system_instructions) and 'execute_task tools' > 'execute_tool <tool>' (gen_ai.tool.name). Worker turn: "
    "'execute_task operator' > 'execute_task call_agent' > 'invoke_agent operator' (gen_ai.agent.name=operator; a "
    "leaf spanning the worker's run) and 'execute_task operator' > execute_task model > ChatOpenAI.chat, execute_task "
    "tools > execute_tool ...; every span in a worker carries traceloop.association.properties.lc_agent_name, the "
    "coordinator's none. Handoff: 'execute_tool transfer_to_<agent>' (gen_ai.tool.name) with a child 'goto <agent>' "
    "(gen_ai.operation.name goto, langgraph.command.source_node=tools, langgraph.command.goto_node=<agent>) and "
    "another 'goto <agent>' under the coordinator's graph span; the ParentCommand that carries it marks 'execute_task "
    "tools', both 'execute_task coordinator' and 'invoke_agent coordinator' STATUS_CODE_ERROR (error.type "
    "ParentCommand, gen_ai.task.status failure) on every handoff: a control-flow exception reads as a failure. The "
    "hand-back is no span: the worker's report is in 'execute_task call_agent' output (gen_ai.task.output) and the "
    "next coordinator ChatOpenAI.chat input. Limit: 'sre-team.workflow' (error.type GraphRecursionError, "
    "gen_ai.task.status failure) and 'invoke_agent sre-team' STATUS_CODE_ERROR 'Recursion limit of 8 reached ...', "
    "with and without content. No content (TRACELOOP_TRACE_CONTENT=false): gen_ai.task.input/output, "
    "gen_ai.input/output messages, gen_ai.tool.call.arguments/result and the chat spans' gen_ai.system_instructions "
    "go, but the create_agent spans keep their gen_ai.system_instructions (the role markers), and the ParentCommand "
    "status messages still quote the Command repr with the "
    "conversation's message contents.")

if __name__ == "__main__":
    main()
