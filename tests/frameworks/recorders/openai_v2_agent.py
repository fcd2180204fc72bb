"""The hand-written agent both openai-v2 recorders run: the ``openai`` client in a plain tool loop.

No agent framework: the loop a user writes around ``client.chat.completions.create``, traced
by ``opentelemetry-instrumentation-openai-v2`` (one span per model call) and, for the agent
and its tool calls, by ``opentelemetry-util-genai``'s ``TelemetryHandler`` (the helper that
instrumentation is built on: ``invoke_agent sre-agent`` around the run, ``execute_tool <name>``
around each call), so a run is one trace. Tool arguments and results are handed to a tool
invocation only when it says content goes on its span (``should_capture_content_on_span``),
as its docstring asks: util-genai 1.1 sends no tool content to log records. The loop stops
itself after ``LIMIT`` model calls (``StepLimitExceeded``), the budget a hand-written loop has.
"""

from __future__ import annotations

import inspect
import json
from contextlib import contextmanager
from typing import Any, Callable, Iterator

MODEL = "gpt-4o-mini"
AGENT = "sre-agent"


class StepLimitExceeded(RuntimeError):
    """The loop used up its model calls without a final answer."""


class _NoContent:
    should_capture_content_on_span = False


class PlainSpans:
    """The agent and tool spans a user writes by hand with the OpenTelemetry API, named and attributed
    as the GenAI conventions say (for an ``opentelemetry-util-genai`` too old to make them), no content.
    Offers the two ``TelemetryHandler`` calls :func:`run_agent` uses."""

    def __init__(self) -> None:
        from opentelemetry import trace

        self._tracer = trace.get_tracer("sre-agent")

    @contextmanager
    def invoke_local_agent(self, *, agent_name: str, request_model: str) -> Iterator[None]:
        with self._tracer.start_as_current_span(f"invoke_agent {agent_name}", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name,
                "gen_ai.request.model": request_model}):
            yield

    @contextmanager
    def tool(self, name: str, *, tool_call_id: str, tool_type: str) -> Iterator[_NoContent]:
        with self._tracer.start_as_current_span(f"execute_tool {name}", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": tool_call_id, "gen_ai.tool.type": tool_type}):
            yield _NoContent()


def tool_schema(function: Callable[..., Any]) -> dict[str, Any]:
    """The OpenAI tool definition of one cluster tool, from its signature and docstring."""
    kinds = {int: "integer", str: "string", float: "number", bool: "boolean"}
    hints = inspect.get_annotations(function, eval_str=True)
    params = [p for p in inspect.signature(function).parameters if p != "self"]
    return {"type": "function", "function": {
        "name": function.__name__, "description": (function.__doc__ or "").strip(),
        "parameters": {"type": "object", "properties": {p: {"type": kinds.get(hints.get(p), "string")} for p in params},
                       "required": params}}}


def run_agent(client: Any, handler: Any, task: str, instructions: str, tools: list[Callable[..., Any]],
              limit: int) -> str | None:
    """One agent run: call the model, run the tools it asks for, until it answers or ``limit`` calls are spent."""
    by_name = {t.__name__: t for t in tools}
    schemas = [tool_schema(t) for t in tools]
    messages: list[dict[str, Any]] = [{"role": "system", "content": instructions}, {"role": "user", "content": task}]
    with handler.invoke_local_agent(agent_name=AGENT, request_model=MODEL):
        for _ in range(limit):
            response = client.chat.completions.create(model=MODEL, messages=messages, tools=schemas)
            message = response.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return message.content
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments or "{}")
                with handler.tool(call.function.name, tool_call_id=call.id, tool_type="function") as invocation:
                    if invocation.should_capture_content_on_span:
                        invocation.arguments = arguments
                    result = by_name[call.function.name](**arguments)
                    if invocation.should_capture_content_on_span:
                        invocation.tool_result = result
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
        raise StepLimitExceeded(f"no final answer after {limit} model calls")
