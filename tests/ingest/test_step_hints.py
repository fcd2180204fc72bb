"""Steps' agent name and budget are read whichever convention wrote the span."""

from __future__ import annotations

from mast_otel.wire import attributes as A
from mast_otel.processors.ingest.normalize import normalize
from mast_otel.processors.model import Role


def test_genai_steps_keep_agent_name_and_budget():
    chat = normalize("chat gpt-4o", {A.GEN_AI_OPERATION_NAME: "chat", A.GEN_AI_REQUEST_MODEL: "gpt-4o",
                                     A.GEN_AI_AGENT_NAME: "triage", A.MAST_TASK_MAX_STEPS: "5", A.MAST_STEP_INDEX: 2})
    assert (chat["role"], chat["agent_name"], chat["step_budget"], chat["step_index"]) == (Role.LLM, "triage", 5, 2)
    tool = normalize("execute_tool get", {A.GEN_AI_OPERATION_NAME: "execute_tool", A.GEN_AI_AGENT_NAME: "triage"})
    assert (tool["role"], tool["agent_name"], tool.get("step_budget")) == (Role.TOOL, "triage", None)


def test_other_conventions_steps_accept_gen_ai_agent_name():
    llm = normalize("ChatOpenAI", {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4o",
                                   A.GEN_AI_AGENT_NAME: "planner"})
    assert (llm["role"], llm["agent_name"]) == (Role.LLM, "planner")
    tool = normalize("search.tool", {"traceloop.span.kind": "tool", A.GEN_AI_AGENT_NAME: "planner"})
    assert (tool["role"], tool["agent_name"]) == (Role.TOOL, "planner")


def test_agent_spans_keep_the_budget_as_a_run_hint_not_a_step_budget():
    agent = normalize("invoke_agent triage", {A.GEN_AI_OPERATION_NAME: "invoke_agent", A.GEN_AI_AGENT_NAME: "triage",
                                              A.MAST_TASK_MAX_STEPS: 5})
    assert agent["hints"].max_steps == 5 and "step_budget" not in agent
