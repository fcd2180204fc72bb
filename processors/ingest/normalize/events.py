"""GenAI content carried in events (span events, or log records read as events) instead of attributes.

Instrumentations that send content as events (the "events" flavour of the GenAI conventions)
use two shapes; both are turned into the attributes the GenAI normalizer already reads, so one
parser serves spans, span events and log records alike:

- ``gen_ai.client.inference.operation.details`` (and any event carrying them) lends its
  ``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``,
  ``gen_ai.tool.definitions``, ``gen_ai.response.finish_reasons`` and tool call arguments and
  result to the span, whether they are JSON strings or structured values (lists of messages
  with ``parts`` of type ``text``, ``tool_call``, ``tool_call_response``);
- the per-message events ``gen_ai.{system,user,assistant,tool}.message`` become the input
  messages and each ``gen_ai.choice`` an output message with its finish reason. Their bodies
  (``content``; ``tool_calls`` with ids and arguments, inside the choice's ``message`` or
  beside it; ``id``, the call a tool message answers) keep tool calls, their arguments and
  results, so a call repeated with the same arguments is seen as such. Content given as a list
  of parts in the Gemini shape (``text``, ``function_call``, ``function_response``) is read too.
  On a tool span the tool message is the call's arguments and the choice its result.

Attributes already on the span win: events only fill what is missing. :func:`add_event_content`
does the same for a span normalized before its events arrived (log records sent after it).
A log record is an event whose name is the record's event name and whose attributes are the
record's attributes with its body's fields added (see ``ingest.log_records``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from mast_otel.wire import attributes as A
from mast_otel.processors.ingest.normalize import genai
from mast_otel.processors.ingest.normalize.common import Fields, maybe_json
from mast_otel.processors.tools.content_memo import MAX_VALUES, kept
from mast_otel.processors.model import AGENT, LLM, TOOL, GuardIntervention, RunHints, Span

Event = tuple[str, Mapping[str, Any]]

OPERATION_DETAILS = "gen_ai.client.inference.operation.details"
TOOL_DEFINITIONS = genai.TOOL_DEFINITIONS
# what an event lends as it is, the first event carrying a key winning
_LENT = (A.GEN_AI_INPUT_MESSAGES, A.GEN_AI_OUTPUT_MESSAGES, A.GEN_AI_SYSTEM_INSTRUCTIONS, TOOL_DEFINITIONS,
         A.GEN_AI_TOOL_CALL_ARGUMENTS, A.GEN_AI_TOOL_CALL_RESULT, A.GEN_AI_RESPONSE_FINISH_REASONS)
_LENT_KEYS = frozenset(_LENT)
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_CHOICE = "gen_ai.choice"
_ROLES = {"model": "assistant"}  # Gemini's name for the assistant


def with_event_content(attrs: Mapping[str, Any], events: Sequence[Event]) -> Mapping[str, Any]:
    """``attrs``, plus the content attributes its events supply (a new dict only when they do)."""
    lent: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    reasons: list[str] = []
    tool_arguments: list[Any] = []  # on a tool span: what its tool message and choice carried
    tool_results: list[Any] = []
    on_tool = attrs.get(A.GEN_AI_OPERATION_NAME) == A.OP_EXECUTE_TOOL
    for name, event_attrs in events:
        if not _LENT_KEYS.isdisjoint(event_attrs):  # (most events lend none of them: one pass in C)
            for key in _LENT:
                if key not in attrs and key not in lent and event_attrs.get(key) is not None:
                    lent[key] = event_attrs[key]
        role = _MESSAGE_EVENTS.get(name)
        if role is not None:
            inputs.append(_message(event_attrs, role))
            if role == "tool":
                tool_arguments.append(event_attrs.get("content"))
        elif name == _CHOICE:
            message = maybe_json(event_attrs.get("message"))  # (read once for both)
            outputs.append(_choice(event_attrs, message))
            reason = event_attrs.get("finish_reason")
            if isinstance(reason, str) and reason:
                reasons.append(reason)
            if on_tool:
                tool_results.append(_choice_content(event_attrs, message))
    if reasons:
        _lend(lent, attrs, A.GEN_AI_RESPONSE_FINISH_REASONS, reasons)
    if inputs or outputs:
        if on_tool:
            _lend(lent, attrs, A.GEN_AI_TOOL_CALL_ARGUMENTS, tool_arguments[-1] if tool_arguments else None)
            _lend(lent, attrs, A.GEN_AI_TOOL_CALL_RESULT, tool_results[-1] if tool_results else None)
        else:
            _lend(lent, attrs, A.GEN_AI_INPUT_MESSAGES, inputs or None)
            _lend(lent, attrs, A.GEN_AI_OUTPUT_MESSAGES, outputs or None)
    if not lent:
        return attrs
    merged = dict(attrs)
    merged.update(lent)
    return merged


_CONTENT = (A.GEN_AI_INPUT_MESSAGES, A.GEN_AI_OUTPUT_MESSAGES, A.GEN_AI_TOOL_CALL_ARGUMENTS, A.GEN_AI_TOOL_CALL_RESULT)


def lent_content(attrs: Mapping[str, Any], merged: Mapping[str, Any]) -> bool:
    """Whether ``merged`` (what :func:`with_event_content` made of ``attrs``) holds messages or a
    tool call's content that ``attrs`` lacked: offered tools or finish reasons alone are not content."""
    return merged is not attrs and any(key in merged and key not in attrs for key in _CONTENT)


def _lend(lent: dict[str, Any], attrs: Mapping[str, Any], key: str, value: Any) -> None:
    if value is not None and key not in attrs and key not in lent:
        lent[key] = value


def _message(event_attrs: Mapping[str, Any], role: str) -> dict[str, Any]:
    """One per-message event as a GenAI message in the parts format.

    A model call's events repeat every earlier message of its run, so while a content memo is held
    a message is made once per request for each distinct event (its role and the texts it is read
    from, each a string or absent; an event with any other value is read afresh) and handed out
    again: nothing writes into a message once made."""
    get = event_attrs.get
    key = (role, get("content"), get("id"), get("tool_call_id"), get("tool_calls"), get("role"))
    store = kept(_message) if set(map(type, key)) <= _TEXT_OR_NONE else None
    if store is None:
        return _new_message(event_attrs, role)
    found = store.get(key)
    if found is None:
        if len(store) >= MAX_VALUES:
            store.clear()  # start over rather than grow
        found = store[key] = _new_message(event_attrs, role)
    return found


_TEXT_OR_NONE = frozenset({str, type(None)})  # (a string never equals a number: no other value's message is found)


def _content_of(value: Any) -> Any:
    """A message's content as an event carries it. Span events' attributes cannot hold a list, so
    instrumentations write content blocks as JSON text; that text is read back, but only where it
    holds what they write: a list of blocks, each a map with a block's keys. Other text is the
    message's own, as it would be on the span's attributes, even where it reads as JSON (a user who
    types ``null``, ``"x"``, ``[1]`` or ``[{"a": 1}]``)."""
    if not isinstance(value, str):
        return value
    read = maybe_json(value)
    return read if isinstance(read, list) and read and all(isinstance(b, dict) and not _BLOCK_KEYS.isdisjoint(b) for b in read) \
        else value


# what marks a map as a content block (see _content_parts): its type, its text, a call or a response
_BLOCK_KEYS = frozenset({"type", "text", "function_call", "functionCall", "function_response", "functionResponse", "toolUse"})


def _new_message(event_attrs: Mapping[str, Any], role: str) -> dict[str, Any]:
    content = event_attrs.get("content")
    if role == "tool":  # the result of the call it names, as it came (a tool value is read where it is compared)
        call_id = event_attrs.get("id") or event_attrs.get("tool_call_id")
        parts: list[dict[str, Any]] = [{"type": "tool_call_response", "id": call_id, "response": content}] \
            if content is not None or call_id else []
        return {"role": "tool", "parts": parts}
    parts = _content_parts(_content_of(content), with_calls=True)
    parts += _call_parts(event_attrs.get("tool_calls"))
    return {"role": _role(event_attrs.get("role"), role), "parts": parts}


def _choice(event_attrs: Mapping[str, Any], message: Any) -> dict[str, Any]:
    """A ``gen_ai.choice`` as an output message: its message's content and the tool calls asked for,
    inside the message (OpenAI's shape) or beside it (Gemini's, which repeats them in the content:
    read once). ``message``: its ``message`` attribute, read by :func:`maybe_json`."""
    if not isinstance(message, dict):
        message = {"content": message} if message is not None else {}
    beside = maybe_json(event_attrs.get("tool_calls"))
    parts = _content_parts(_content_of(message.get("content", event_attrs.get("content"))), with_calls=not beside)
    parts += _call_parts(message.get("tool_calls")) + _call_parts(beside)
    found: dict[str, Any] = {"role": _role(message.get("role"), "assistant"), "parts": parts}
    reason = event_attrs.get("finish_reason")
    if reason is not None:
        found["finish_reason"] = reason
    return found


def _choice_content(event_attrs: Mapping[str, Any], message: Any) -> Any:
    """What a tool span's choice says the call returned (``message`` as :func:`_choice` takes it)."""
    if isinstance(message, dict):
        return maybe_json(message.get("content"))
    return message if message is not None else maybe_json(event_attrs.get("content"))


def _role(value: Any, default: str) -> str:
    role = value if isinstance(value, str) and value else default
    return _ROLES.get(role, role)


def _content_parts(content: Any, *, with_calls: bool) -> list[dict[str, Any]]:
    """A message's content as parts: text as it is; lists of content blocks read block by block
    (text, Gemini's ``function_call``/``function_response``, Bedrock's ``toolUse``)."""
    if content is None or content == "":
        return []
    if not isinstance(content, list):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, dict):
            parts.append({"type": "text", "content": block})
            continue
        call = block.get("function_call") or block.get("functionCall")
        response = block.get("function_response") or block.get("functionResponse")
        use = block.get("toolUse")
        if isinstance(call, dict):
            if with_calls:
                parts.append({"type": "tool_call", "id": call.get("id"), "name": call.get("name"),
                              "arguments": call.get("args", call.get("arguments"))})
        elif isinstance(response, dict):
            parts.append({"type": "tool_call_response", "id": response.get("id"), "response": response.get("response")})
        elif isinstance(use, dict):
            if with_calls:
                parts.append({"type": "tool_call", "id": use.get("toolUseId"), "name": use.get("name"), "arguments": use.get("input")})
        elif block.get("type") in ("tool_call", "tool_call_response") or (block.get("type") == "text" and "content" in block):
            parts.append(block)  # already a part of the GenAI format
        elif "text" in block:  # a content block of OpenAI's or Gemini's shape
            parts.append({"type": "text", "content": block["text"]})
        else:
            parts.append({"type": "text", "content": block})
    return parts


def _call_parts(calls: Any) -> list[dict[str, Any]]:
    """``tool_calls`` (``{"id", "type", "function": {"name", "arguments"}}``) as ``tool_call`` parts."""
    calls = maybe_json(calls)
    if not isinstance(calls, list):
        return []
    parts = []
    for call in calls:
        if not isinstance(call, dict):
            continue
        function = call.get("function")
        source = function if isinstance(function, dict) else call
        parts.append({"type": "tool_call", "id": call.get("id"), "name": source.get("name"), "arguments": source.get("arguments")})
    return parts


# --- events that arrive after their span was normalized -----------------------------------

_OPERATION_OF_ROLE = {LLM: A.OP_CHAT, TOOL: A.OP_EXECUTE_TOOL, AGENT: A.OP_INVOKE_AGENT}
# the content fields events can fill, and the hashes the detectors compare
CONTENT_FIELDS = ("input_message_count", "input_text", "output_text", "requested_tools", "tools_offered",
                  "finish_reasons", "tool_exchanges", "tool_args", "tool_result", "args_hash", "result_hash")


def add_event_content(span: Span, events: Sequence[Event], content_chars: int, source: str = "logs") -> bool:
    """Fill the content fields ``span`` lacks from ``events`` (log records that reached the processor
    after the span was normalized), as if the span had carried them; ``span.content_source`` says
    where they came from. Whether anything was added.

    Reads the events as :func:`with_event_content` does and normalizes them as a GenAI call of the
    span's role, so the result matches a span decoded with the same events (or the same content on
    its attributes); fields already set stay as they are."""
    operation = _OPERATION_OF_ROLE.get(span.role)
    if operation is None or not events:
        return False
    attrs = with_event_content({A.GEN_AI_OPERATION_NAME: operation}, events)
    if len(attrs) == 1:
        return False
    found = Fields()
    genai.fill(found, span.name, attrs, content_chars)
    values = found.values
    added = False
    for name in CONTENT_FIELDS:
        value = values.get(name)
        if value is None or value == () or getattr(span, name) not in (None, ()):
            continue
        setattr(span, name, value)
        added = True
    if values.get("error") and not span.error:  # a result that reports a failure as a value
        span.error, span.error_type = True, values.get("error_type")
        for key, how in (values.get("derived") or {}).items():
            _note(span, key, how)
    hints = values.get("hints")
    if span.role is AGENT and isinstance(hints, RunHints):
        added = _agent_hints(span, hints) or added
    if added:
        span.content_source = source
    return added


def _agent_hints(span: Span, found: RunHints) -> bool:
    if found.task is None and found.final_answer is None:
        return False
    if span.hints is None:
        span.hints = RunHints()
    added = False
    if span.hints.task is None and found.task is not None:
        span.hints.task, added = found.task, True
    if span.hints.final_answer is None and found.final_answer is not None:
        span.hints.final_answer, added = found.final_answer, True
    return added


def _note(span: Span, field: str, how: str) -> None:
    if span.derived is None:
        span.derived = {}
    span.derived.setdefault(field, how)


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

