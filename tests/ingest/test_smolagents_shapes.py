"""smolagents through OpenInference, shapes the framework corpus (a ToolCallingAgent) does not hold:
a CodeAgent, whose actions are the code in its model output, run inside ``Step N`` spans, and its
``final_answer``. Synthetic spans made with the real OTel SDK, shaped as
openinference-instrumentation-smolagents writes them (span names, kinds, attributes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mast_otel.processors.ingest.files import load_runs
from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.ingest.decode import decode_protobuf
from mast_otel.processors.model import Role, Run

from .otlp import capture, protobuf_of

TASK = "How many rows of data.csv have a price above 100?"
SYSTEM = "You are an expert assistant who can solve any task using code blobs."


def _code_agent_run(codes: list[str], answer: str = "42", *, final_tool_name: bool = True):
    provider, exporter = capture("code-agent")
    tracer = provider.get_tracer("openinference.instrumentation.smolagents")
    with tracer.start_as_current_span("CodeAgent.run", attributes={
            "openinference.span.kind": "AGENT", "input.value": json.dumps({"task": TASK}), "smolagents.max_steps": 20}):
        for n, code in enumerate(codes, start=1):
            with tracer.start_as_current_span(f"Step {n}", attributes={
                    "openinference.span.kind": "CHAIN",
                    "input.value": json.dumps({"memory_step": f"ActionStep(step_number={n}, model_output=None)"})}):
                messages = {"llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": SYSTEM,
                            "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": TASK}
                for i in range(n - 1):
                    messages[f"llm.input_messages.{2 + i}.message.role"] = "assistant"
                    messages[f"llm.input_messages.{2 + i}.message.content"] = f"Observation: step {i + 1}"
                with tracer.start_as_current_span("OpenAIServerModel.generate", attributes={
                        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o", "llm.token_count.prompt": 900,
                        "llm.token_count.completion": 60, **messages,
                        "llm.output_messages.0.message.role": "assistant",
                        "llm.output_messages.0.message.content": f"Thought: let me look (attempt {n}).\n<code>\n{code}\n</code>"}):
                    pass
                if "final_answer(" in code:
                    attrs = {"openinference.span.kind": "TOOL",
                             "input.value": json.dumps({"args": [answer], "sanitize_inputs_outputs": False, "kwargs": {}})}
                    if final_tool_name:
                        attrs["tool.name"] = "final_answer"
                    with tracer.start_as_current_span("FinalAnswerTool", attributes=attrs):
                        pass
    spans = decode_protobuf(protobuf_of(exporter.get_finished_spans())).spans
    return Run.from_spans(spans[0].trace_id, spans, completion="root_ended")


def test_a_code_agent_running_the_same_code_again_and_again_is_looping():
    code = "import pandas as pd\ndf = pd.read_csv('data.csv')\nprint(df.head())"
    run = _code_agent_run([code, code + "  ", code, code, f"final_answer('42')"])
    found = [f for f in rule_findings(run) if f.mode == "FM-1.3"]
    assert len(found) == 1, found
    assert "same code" in found[0].explanation and "4 times" in found[0].explanation
    assert set(found[0].evidence_span_ids) <= {s.span_id for s in run.llm_calls}


def test_a_code_agent_whose_code_moves_on_is_not_looping():
    run = _code_agent_run(["df = pd.read_csv('data.csv')\nprint(df.columns)", "print((df.price > 100).sum())",
                           "print(df.head())", "final_answer('42')"])
    assert [f.mode for f in rule_findings(run)] == []
    assert run.hints.final_answer == "42"


def test_a_final_answer_span_without_a_tool_name_is_the_runs_answer_not_a_step():
    """Its class name (``FinalAnswerTool``) is its only name; the answer only in its arguments."""
    run = _code_agent_run(["print(1 + 1)", "final_answer('2')"], answer="2", final_tool_name=False)
    rule_findings(run)
    assert [s.role for s in run.steps] == [Role.LLM, Role.LLM]
    assert run.hints.final_answer == "2"


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("recording, agent", [
    ("tests/frameworks/corpus/smolagents/no-content/limit.json", "sre_agent"),
    ("tests/teams/corpus/smolagents/no-content/team_limit.json", "coordinator"),  # a manager with managed agents
])
def test_with_content_off_a_smolagents_limit_is_read_from_its_max_steps(recording, agent):
    """Recorded runs (the corpora's stub model): with content off only ``smolagents.max_steps`` and the
    ``Step N`` spans, which reached it, show the limit (its extra final-answer call is in no step)."""
    [run] = load_runs([REPO / recording])
    found = [f for f in rule_findings(run) if f.mode == "FM-1.5"]
    assert len(found) == 1 and f"agent {agent!r} used 8 of 8 action steps, as smolagents counts them" in found[0].explanation
