"""LangGraph: an agent span is often a graph node (``agent``, ``call_agent``), not the agent.

In a team (a supervisor graph whose nodes are agents), OpenInference marks the node that runs
a model loop as the agent span, named after the node (``agent``, ``call_agent``); the agent the
user named is the outer graph's node it runs in. LangGraph writes that path into each span's
``metadata`` as ``langgraph_checkpoint_ns`` (``coordinator:<id>|agent:<id>``): its first
segment is the outermost node, the team member.
"""

from __future__ import annotations

from typing import Any, Mapping

# Node names LangGraph's prebuilt agents give their own loop; never a team member's name.
GENERIC_NODES = frozenset({"agent", "call_agent", "call_model", "model", "tools", "__start__", "__end__",
                           "langgraph", "graph", "supervisor_agent"})


def team_member(metadata: Mapping[str, Any] | None) -> str | None:
    """The outermost graph node a span runs in, when that names an agent (not a generic node)."""
    if not metadata:
        return None
    path = metadata.get("langgraph_checkpoint_ns")
    if not isinstance(path, str) or not path:
        return None
    head = path.split("|", 1)[0].split(":", 1)[0].strip()
    return head if head and head.lower() not in GENERIC_NODES else None
