"""Agent-side OpenTelemetry instrumentation: agent runs, model calls and tool calls as GenAI spans.

Importing this package loads neither litellm nor FastAPI, and does nothing by itself::

    from mast_otel.instrumentation import agent_run, setup_tracing, tool

    setup_tracing("http://mast-otel:4318")
    with agent_run("triage", max_steps=10) as run:
        ...
"""

from mast_otel.instrumentation.litellm_support import instrument_litellm, uninstrument_litellm
from mast_otel.instrumentation.runs import AgentRun, agent_run, current_run
from mast_otel.instrumentation.settings import configure
from mast_otel.instrumentation.tools import ToolCall, tool, tool_call
from mast_otel.instrumentation.tracing import setup_tracing

__all__ = [
    "AgentRun",
    "ToolCall",
    "agent_run",
    "configure",
    "current_run",
    "instrument_litellm",
    "setup_tracing",
    "tool",
    "tool_call",
    "uninstrument_litellm",
]
