"""Vercel AI SDK ``ai.*`` spans: ``ai.operationId`` picks the role (see the package docstring).

Model calls keep the request in ``ai.prompt.messages`` (the SDK's own message format) and
the response in ``ai.response.text`` / ``ai.response.toolCalls``; tool calls in
``ai.toolCall.name`` / ``.id`` / ``.args`` / ``.result``; the run its request in ``ai.prompt``
and its answer in ``ai.response.text``. Finish reasons are ``ai.response.finishReason``
(``tool-calls``, ``stop``, ``length``). Content is there only when the user records inputs
and outputs; names, ids, finish reasons and usage always are.
"""

from __future__ import annotations

from typing import Any, Mapping

from mast_otel.processors.frameworks import aisdk
from mast_otel.processors.hints.model_names import fold
from mast_otel.processors.ingest.normalize.common import (
    Message,
    as_int,
    as_name,
    as_str_tuple,
    as_text,
    maybe_json,
    render,
    requested_tools,
    set_agent_content,
    set_tool_content,
    tool_exchanges,
)
from mast_otel.processors.model import AGENT, LLM, TOOL, Role

OPERATION = aisdk.OPERATION


def fill(span: Any, name: str, attrs: Mapping[str, Any], limit: int) -> Role | None:
    """Set a run, model call or tool call's fields on ``span``; its role, or ``None`` (nothing set)."""
    operation = attrs.get(OPERATION)
    if operation in aisdk.MODEL_CALLS:
        role = LLM
    elif operation == aisdk.TOOL_CALL:
        role = TOOL
    elif operation in aisdk.RUNS:
        role = AGENT
    else:
        return None
    span.role = role
    span.convention = "ai_sdk"
    if role is not AGENT:  # every ai.* span names its run: the steps name their agent, as they arrive
        span.agent_name = as_name(attrs.get(aisdk.FUNCTION_ID)) or span.agent_name
    if role is LLM:
        _llm(span, attrs, limit)
    elif role is TOOL:
        span.tool_name = as_name(attrs.get("ai.toolCall.name")) or as_name(name)
        call_id = attrs.get("ai.toolCall.id")
        if call_id is not None:
            span.tool_call_id = as_text(call_id)
        args, result = attrs.get("ai.toolCall.args"), attrs.get("ai.toolCall.result")
        if args is not None or result is not None:
            set_tool_content(span, args, result, limit)
    else:
        span.agent_name = as_name(attrs.get(aisdk.FUNCTION_ID)) or as_name(operation)
        reason = attrs.get("ai.response.finishReason")
        if reason is not None:
            span.finish_reasons = as_str_tuple(reason)
        set_agent_content(span, _task(attrs.get("ai.prompt")), as_text(attrs.get("ai.response.text")) or None, limit)
    return role


def _llm(span: Any, attrs: Mapping[str, Any], limit: int) -> None:
    get = attrs.get
    span.request_model = request = as_name(get("ai.model.id") or get("gen_ai.request.model"))
    span.model = fold(as_name(get("ai.response.model") or get("gen_ai.response.model")) or request)
    span.provider = as_name(get("ai.model.provider") or get("gen_ai.system"))
    tokens = get("ai.usage.inputTokens", get("ai.usage.promptTokens"))
    if tokens is not None:
        span.input_tokens = as_int(tokens)
    tokens = get("ai.usage.outputTokens", get("ai.usage.completionTokens"))
    if tokens is not None:
        span.output_tokens = as_int(tokens)
    reason = get("ai.response.finishReason")
    if reason is not None:
        span.finish_reasons = as_str_tuple(reason)
    prompt = get("ai.prompt.messages")
    inputs = messages(prompt) if prompt is not None else None
    if inputs is not None:
        span.input_message_count = len(inputs)
        span.input_text = render(inputs, limit)
        span.tools_offered = "ai.prompt.tools" in attrs
    text, calls = get("ai.response.text"), get("ai.response.toolCalls")
    outputs = None
    if text is not None or calls is not None:
        outputs = [_message("assistant", [{"type": "text", "text": as_text(text) or ""},
                                          *(_tool_call_part(c) for c in _list(calls))])]
        span.requested_tools = requested_tools(outputs)
        span.output_text = render(outputs, limit)
    exchanges = tool_exchanges((inputs or []) + (outputs or []))
    if exchanges:
        span.tool_exchanges = exchanges


def _task(prompt: Any) -> str | None:
    """The request of a run: ``ai.prompt`` is ``{"system", "prompt"}`` or ``{"system", "messages"}``."""
    parsed = maybe_json(prompt)
    if not isinstance(parsed, dict):
        return as_text(parsed) if parsed else None
    if isinstance(parsed.get("prompt"), str):
        return parsed["prompt"]
    found = messages(parsed.get("prompt") or parsed.get("messages"))
    return next((m.text for m in found or () if m.role == "user" and m.text), None)


def messages(value: Any) -> list[Message] | None:
    """AI SDK prompt messages (``role`` with ``content`` a string or a list of parts)."""
    parsed = _list(value)
    if not parsed:
        return None
    return [_message(str(item.get("role") or ""), item.get("content")) if isinstance(item, dict)
            else Message("", as_text(item) or "") for item in parsed]


def _message(role: str, content: Any) -> Message:
    if not isinstance(content, list):
        return Message(role, as_text(content) or "")
    texts: list[str] = []
    tools: list[str] = []
    exchanges: list[tuple[str, Any, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind, call_id = part.get("type"), part.get("toolCallId")
        if kind == "text" and part.get("text"):
            texts.append(as_text(part["text"]) or "")
        elif kind == "tool-call":
            if part.get("toolName"):
                tools.append(str(part["toolName"]))
            if call_id:
                exchanges.append((str(call_id), part.get("input", part.get("args")), None))
        elif kind == "tool-result":
            result = _result_value(part.get("output", part.get("result")))
            texts.append(as_text(result) or "")
            if call_id:
                exchanges.append((str(call_id), None, result))
    return Message(role, "\n".join(t for t in texts if t), tuple(as_name(t) or t for t in tools), tuple(exchanges))


def _tool_call_part(call: Any) -> dict[str, Any]:
    """A ``ai.response.toolCalls`` entry as a ``tool-call`` part (its input may be a JSON string)."""
    if not isinstance(call, dict):
        return {}
    return {"type": "tool-call", "toolCallId": call.get("toolCallId"), "toolName": call.get("toolName"),
            "input": maybe_json(call.get("input", call.get("args")))}


def _result_value(output: Any) -> Any:
    """A tool result's value: AI SDK 5+ wraps it as ``{"type": "json" | "text" | "error-text", "value"}``."""
    if isinstance(output, dict) and "value" in output and "type" in output:
        return output["value"]
    return output


def _list(value: Any) -> list[Any]:
    parsed = maybe_json(value)
    return parsed if isinstance(parsed, list) else []
