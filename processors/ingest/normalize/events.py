"""GenAI content carried in span events instead of attributes.

Some instrumentations (older OTel GenAI semconv, anything following the
"events" flavour of the conventions) put messages, tool arguments and tool results in span
events. This turns them into the attribute form the GenAI normalizer already reads, so one
parser serves both:

- an event carrying ``gen_ai.input.messages``, ``gen_ai.output.messages``,
  ``gen_ai.tool.call.arguments`` or ``gen_ai.tool.call.result`` (the
  ``gen_ai.client.inference.operation.details`` event) lends those attributes to the span;
- the per-message events ``gen_ai.{system,user,assistant,tool}.message`` become the input
  messages, ``gen_ai.choice`` the output; on a tool span the tool message is the call's
  arguments and the choice its result.

Attributes already on the span win: events only fill what is missing.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from mast_otel.wire import attributes as A
from mast_otel.processors.ingest.normalize.common import maybe_json
from mast_otel.processors.model import GuardIntervention

Event = tuple[str, Mapping[str, Any]]

_LENT = (A.GEN_AI_INPUT_MESSAGES, A.GEN_AI_OUTPUT_MESSAGES, A.GEN_AI_TOOL_CALL_ARGUMENTS, A.GEN_AI_TOOL_CALL_RESULT)
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_CHOICE = "gen_ai.choice"


def with_event_content(attrs: Mapping[str, Any], events: Sequence[Event]) -> Mapping[str, Any]:
    """``attrs``, plus the content attributes its events supply (a new dict only when they do)."""
    lent: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    for name, event_attrs in events:
        for key in _LENT:
            if key not in attrs and key not in lent and event_attrs.get(key) is not None:
                lent[key] = event_attrs[key]
        role = _MESSAGE_EVENTS.get(name)
        if role is not None:
            inputs.append(_message(event_attrs, role))
        elif name == _CHOICE:
            outputs.append(_message(event_attrs, "assistant"))
            reason = event_attrs.get("finish_reason")
            if reason and A.GEN_AI_RESPONSE_FINISH_REASONS not in attrs:
                lent[A.GEN_AI_RESPONSE_FINISH_REASONS] = [reason]
    if inputs or outputs:
        if attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_EXECUTE_TOOL:
            tool_inputs = [m for m in inputs if m["role"] == "tool"]
            _lend(lent, attrs, A.GEN_AI_TOOL_CALL_ARGUMENTS, tool_inputs[-1]["content"] if tool_inputs else None)
            _lend(lent, attrs, A.GEN_AI_TOOL_CALL_RESULT, outputs[-1]["content"] if outputs else None)
        else:
            _lend(lent, attrs, A.GEN_AI_INPUT_MESSAGES, inputs or None)
            _lend(lent, attrs, A.GEN_AI_OUTPUT_MESSAGES, outputs or None)
    if not lent:
        return attrs
    merged = dict(attrs)
    merged.update(lent)
    return merged


def _lend(lent: dict[str, Any], attrs: Mapping[str, Any], key: str, value: Any) -> None:
    if value is not None and key not in attrs and key not in lent:
        lent[key] = value


def _message(event_attrs: Mapping[str, Any], role: str) -> dict[str, Any]:
    """One message event as an OpenAI-style chat message (content, tool calls)."""
    body = maybe_json(event_attrs.get("message")) if "message" in event_attrs else None
    content = event_attrs.get("content")
    if isinstance(body, dict):
        content = body.get("content", content)
        calls = body.get("tool_calls") or event_attrs.get("tool_calls")
    else:
        if body is not None and content is None:
            content = body
        calls = event_attrs.get("tool_calls")
    content = maybe_json(content)
    message: dict[str, Any] = {"role": str(event_attrs.get("role") or role), "content": content}
    tool_calls = [_call(c) for c in (maybe_json(calls) or ()) if isinstance(c, dict)] if calls else []
    tool_calls += _tool_use_blocks(content)
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def _call(call: Mapping[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    name = function.get("name") if isinstance(function, dict) else call.get("name")
    return {"type": "function", "function": {"name": name}}


def _tool_use_blocks(content: Any) -> list[dict[str, Any]]:
    """Content blocks of the Bedrock shape, ``[{"toolUse": {"name": ...}}]``."""
    if not isinstance(content, list):
        return []
    return [{"type": "function", "function": {"name": block["toolUse"].get("name")}}
            for block in content if isinstance(block, dict) and isinstance(block.get("toolUse"), dict)]


def guard_interventions(span_id: str, events: Sequence[Event]) -> tuple[GuardIntervention, ...]:
    """The span's ``mast.guard.intervention`` events; ones naming an unknown guard, mode or action are
    skipped (they would become metric labels)."""
    found = []
    for name, attrs in events:
        if name != A.EVENT_GUARD_INTERVENTION:
            continue
        guard, mode, action = attrs.get(A.MAST_GUARD_NAME), attrs.get(A.MAST_GUARD_MODE), attrs.get(A.MAST_GUARD_ACTION)
        mode_id = attrs.get(A.MAST_FAILURE_MODE)
        if guard not in A.GUARD_NAMES or mode not in A.GUARD_MODES or action not in A.GUARD_ACTIONS:
            continue
        evidence = attrs.get(A.MAST_EVIDENCE_SPAN_IDS) or ()
        reason = attrs.get(A.GEN_AI_GUARDRAIL_VERDICT_REASON)
        found.append(GuardIntervention(
            span_id, str(guard), str(mode), str(action), mode_id if isinstance(mode_id, str) else "",
            tuple(str(e) for e in evidence) if isinstance(evidence, (list, tuple)) else (),
            reason[:500] if isinstance(reason, str) else ""))
    return tuple(found)


_OPERATION_OF_ROLE = {"llm": A.OP_CHAT, "tool": A.OP_EXECUTE_TOOL, "agent": A.OP_INVOKE_AGENT}
_CONTENT_FIELDS = ("input_text", "output_text", "tool_args", "tool_result", "args_hash", "result_hash", "requested_tools",
                   "tools_offered", "finish_reasons", "input_message_count", "tool_exchanges", "tool_call_id")


def add_event_content(span: Any, events: Sequence[Event], content_chars: int, source: str = "logs") -> bool:
    """Fill the content fields an already normalized ``span`` lacks from ``events`` (log records
    that arrived after it); whether anything was added. The span's own fields always win."""
    from mast_otel.processors.ingest.normalize import genai
    from mast_otel.processors.ingest.normalize.common import Fields

    operation = _OPERATION_OF_ROLE.get(getattr(span.role, "value", ""))
    if operation is None or not events:
        return False
    attrs: dict[str, Any] = {A.GEN_AI_OPERATION_NAME: operation}
    if span.tool_name:
        attrs[A.GEN_AI_TOOL_NAME] = span.tool_name
    scratch = Fields()
    genai.fill(scratch, span.name, with_event_content(attrs, events), content_chars)
    added = False
    for key in _CONTENT_FIELDS:
        value = scratch.values.get(key)
        if value is not None and value != () and getattr(span, key) in (None, ()):
            setattr(span, key, value)
            added = True
    return added
