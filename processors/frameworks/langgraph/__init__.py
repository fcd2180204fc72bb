"""LangGraph: an agent span is often a graph node (``agent``, ``call_agent``), not the agent.

In a team (a supervisor graph whose nodes are agents), OpenInference marks the node that runs
a model loop as the agent span, named after the node (``agent``, ``call_agent``); the agent the
user named is the outer graph's node it runs in. LangGraph writes that path into each span's
``metadata`` as ``langgraph_checkpoint_ns`` (``coordinator:<id>|agent:<id>``): its first
segment is the outermost node, the team member.

A graph's output (OpenInference's ``output.value`` on the graph span) is its whole state,
``{"messages": [...]}``: the run's answer is its last message when the model's side wrote it.
That is also where a graph that stops itself gracefully says so (``create_react_agent``'s
"Sorry, need more steps to process this request.", LangChain's call-limit middleware's
"Model call limits exceeded: ..." with ``exit_behavior="end"``), far past where a dump's text is read.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from mast_otel.processors.frameworks.table import NOT_AN_ENVELOPE, Framework, StepBudget

# Node names LangGraph's prebuilt agents give their own loop; never a team member's name.
GENERIC_NODES = frozenset({"agent", "call_agent", "call_model", "model", "tools", "__start__", "__end__",
                           "langgraph", "graph", "supervisor_agent"})


def team_member(metadata: Mapping[str, Any] | None) -> str | None:
    """The outermost graph node a span runs in, when that names an agent (not a generic node)."""
    if not metadata:
        return None
    path = metadata.get(_METADATA_KEY)
    if not isinstance(path, str) or not path:
        return None
    head = path.split("|", 1)[0].split(":", 1)[0].strip()
    return head if head and head.lower() not in GENERIC_NODES else None


_STATE_PREFIXES = ('{"messages"', "{'messages'")
_AI_TYPES = frozenset({"ai", "assistant", "AIMessage", "AIMessageChunk"})


def state_answer(value: Any) -> str | None:
    """The text of a graph state's last message when the model's side wrote it, else ``None``
    (not a state dump, or one that ends on the user's or a tool's message)."""
    if not isinstance(value, str) or not value.lstrip().startswith(_STATE_PREFIXES):
        return None
    try:
        state = json.loads(value)
    except ValueError:
        return None
    messages = state.get("messages") if isinstance(state, dict) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    last = messages[-1]
    data, kwargs = last.get("data"), last.get("kwargs")
    body = data if isinstance(data, dict) else kwargs if isinstance(kwargs, dict) else last  # dumpd / lc-serialized / plain
    ids = last.get("id")
    kind = body.get("type") or body.get("role") or last.get("type") or (ids[-1] if isinstance(ids, list) and ids else None)
    if kind not in _AI_TYPES:
        return None
    content = body.get("content")
    if isinstance(content, list):  # content parts
        content = "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return content.strip() or None if isinstance(content, str) else None


def _message_dump(value: dict) -> Any:
    """A LangChain message dump, ``{"type": ..., "data": {...}}``: its data."""
    return value["data"] if value.keys() == {"type", "data"} and isinstance(value["data"], dict) else NOT_AN_ENVELOPE


def _serialized(value: dict) -> Any:
    """A LangChain serialized object (``{"lc": 1, "kwargs": {...}}``): its fields."""
    return value["kwargs"] if value.get("lc") == 1 and isinstance(value.get("kwargs"), dict) else NOT_AN_ENVELOPE


# LangChain's callback records, as OpenLLMetry writes them: around a tool's input
# (``{"input_str": ..., "metadata": ..., "inputs": ...}``) and output (``{"output": ..., "kwargs": ...}``).
_CALLBACK_NOISE = frozenset({"tags", "metadata", "kwargs", "run_id", "parent_run_id", "name", "inputs", "input_str"})


def _callback_input(value: dict) -> Any:
    if "input_str" in value or ("inputs" in value and value.keys() <= _CALLBACK_NOISE):
        inner = value.get("inputs")
        return inner if inner not in (None, {}, "") else value.get("input_str")
    return NOT_AN_ENVELOPE


def _callback_output(value: dict) -> Any:
    return value["output"] if value.keys() <= _CALLBACK_NOISE | {"output"} else NOT_AN_ENVELOPE


def _tool_message(value: dict) -> Any:
    """A ToolMessage (``{"content": ..., "tool_call_id": ..., "status": ...}``): its content."""
    return value["content"] if "tool_call_id" in value or value.get("type") == "tool" else NOT_AN_ENVELOPE


_METADATA_KEY = "langgraph_checkpoint_ns"

# ``recursion_limit`` counts super-steps: each node run (the model node, the tools node) is one, and
# each is a span of its own around the node's model or tool calls. It stops the graph once they reach
# it, raising ``GraphRecursionError`` ("Recursion limit of 25 reached"). Default 25; set in the run's
# config, which no span states.
STEP_BUDGET = StepBudget("recursion_limit", "super-steps", "own_span", stated=r"\brecursion limit of (\d+) reached\b",
                         default=25, stops_at_budget=True)

FRAMEWORK = Framework(
    name="langgraph",
    spellings=("LangGraph", "LangChain", "langchain", "langchain_core"),
    limit_errors=(r"\bGraphRecursionError\b", r"\b(Model|Tool)CallLimitExceeded\w*\b"),
    step_budgets=(STEP_BUDGET,),
    limit_answers=(
        r"\bneed(s)? more steps\b",  # LangGraph's graceful answer at its recursion limit
        r"^(model|tool) call limits? (exceeded|reached)\b",  # LangChain 1.x call-limit middleware ending the run
        r"\bagent stopped due to (iteration|time) limit\b",  # LangChain AgentExecutor
    ),
    envelopes=(("data", _message_dump), ("lc", _serialized)),
    message_dumps=(_message_dump,),
    closing_envelopes=(("input_str", _callback_input), ("inputs", _callback_input), ("output", _callback_output),
                       ("content", _tool_message)),
    generated_id_prefixes=("lc_run",),
    member_of=team_member,
    member_marker=_METADATA_KEY,
    agent_output_answers=(state_answer,),
)
