"""A tool's own model calls (a text-inspection tool asking a model about a file, an agent used as a
tool without an agent span of its own) are not the agent's conversation: no FM-1.4 from them."""

from __future__ import annotations

from mast_otel.processors.detectors import diagnose
from mast_otel.processors.model import Role

TASK = "How many pages of the attached report mention the 2021 revenue?"


def _agent_call(rb, parent, messages: int):
    text = f"system: you are a helpful agent\nuser: {TASK}\n" + "assistant: next step\n" * (messages - 2)
    return rb.llm(parent, input_message_count=messages, input_text=text, requested_tools=("inspect_file_as_text",))


def _run(rb, *, inner_messages: int = 3, inner_parent_is_tool: bool = True):
    a = rb.agent("web")
    for n in (2, 6, 10, 14, 18):
        _agent_call(rb, a, n)
    tool = rb.tool(a, "inspect_file_as_text", {"file_path": "report.pdf", "question": "revenue 2021?"}, "pages 3 and 7")
    inner = rb.llm(tool if inner_parent_is_tool else a, input_message_count=inner_messages,
                   input_text="system: read this file\nuser: revenue 2021?")
    _agent_call(rb, a, 20)
    return rb.run(), inner


def test_a_text_inspection_tools_own_model_call_is_not_lost_history(rb):
    run, inner = _run(rb)
    assert inner.role is Role.LLM
    assert [f for f in diagnose(run) if f.mode == "FM-1.4"] == []


def test_the_same_drop_in_the_agents_own_conversation_is_still_lost_history(rb):
    run, inner = _run(rb, inner_parent_is_tool=False)
    [f] = [f for f in diagnose(run) if f.mode == "FM-1.4"]
    assert inner.span_id in f.evidence_span_ids


def test_an_agent_used_as_a_tool_without_an_agent_span_of_its_own_keeps_its_own_conversation(rb):
    """Agents as tools where the nested run shows no agent span: its model calls sit below the tool
    call (through turn spans that are not kept, re-parented to the tool) and start afresh each time."""
    from mast_otel.processors.model import Run

    a = rb.agent("coordinator")
    for n in (2, 4, 6, 8, 10, 12):
        rb.llm(a, input_message_count=n)
        tool = rb.tool(a, "operator", {"input": f"step {n}"}, f"done {n}")
        inner = rb.llm(tool, input_message_count=2)
        inner.parent_span_id = f"turn{n:012d}"  # the nested run's turn span, not kept
        rb.llm(tool, input_message_count=4).parent_span_id = f"turn{n:012d}"
    links = {f"turn{n:012d}": s.span_id for n, s in zip((2, 4, 6, 8, 10, 12), [s for s in rb.spans if s.tool_name])}
    rb.llm(a, input_message_count=14)
    for agent in (s for s in rb.spans if s.role is Role.AGENT):
        agent.end_ns = max(s.end_ns for s in rb.spans) + 1
    run = Run.from_spans(rb.spans[0].trace_id, list(rb.spans), completion="root_ended", links=links)
    assert [f for f in diagnose(run) if f.mode in ("FM-1.4", "FM-2.1")] == []
