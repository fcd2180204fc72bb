"""OpenTelemetry GenAI semantic conventions: current names and the deprecated ones.

Current: ``gen_ai.operation.name`` picks the role; ``gen_ai.input.messages`` /
``gen_ai.output.messages`` hold content as JSON (parts format). Deprecated: ``gen_ai.system``,
``gen_ai.usage.prompt_tokens``/``completion_tokens``, and flattened ``gen_ai.prompt.N.*`` /
``gen_ai.completion.N.*`` messages (older OpenLLMetry, litellm's tool calls).
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple

from mast_otel.wire import attributes as A
from mast_otel.processors.ingest.normalize.common import (    Exchanges,
    Message,
    NAME_CHARS,
    add_exchanges,
    as_int,
    as_name,
    as_str_tuple,
    as_text,
    cap,
    first_text,
    indexed,
    last_text,
    maybe_json,
    render,
    requested_tools,
    set_agent_content,
    set_tool_content,
    tool_exchanges,
)
from mast_otel.processors.frameworks import registry
from mast_otel.processors.tools.content_memo import MAX_VALUES, kept
from mast_otel.processors.tools.json_text import loads as json_loads
from mast_otel.processors.hints.model_names import fold
from mast_otel.processors.model import AGENT, LLM, TOOL, Role

_ROLE_BY_OPERATION = {
    A.OP_INVOKE_AGENT: AGENT,
    A.OP_CHAT: LLM,
    A.OP_TEXT_COMPLETION: LLM,
    A.OP_GENERATE_CONTENT: LLM,
    A.OP_EXECUTE_TOOL: TOOL,
}
AGENT_FINISH_REASON = "gen_ai.agent.finish_reason"  # draft GenAI attribute: why an agent run ended
TOOL_DEFINITIONS = "gen_ai.tool.definitions"  # the tools offered to the model (opt-in content)
_NOT_STEPS = frozenset({A.OP_EMBEDDINGS, A.OP_CREATE_AGENT, "embedding", "rerank"})

# Probes for flattened deprecated messages: index 0 always exists when any message does.
_PROMPT_PROBES = frozenset({"gen_ai.prompt.0.role", "gen_ai.prompt.0.content"})
_COMPLETION_PROBES = frozenset({
    "gen_ai.completion.0.role",
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.finish_reason",
    "gen_ai.completion.0.function_call.name",
    "gen_ai.completion.0.tool_calls.0.name",
})  # fmt: skip
_CONTENT_KEYS = _PROMPT_PROBES | _COMPLETION_PROBES | {
    A.GEN_AI_INPUT_MESSAGES, A.GEN_AI_OUTPUT_MESSAGES, A.GEN_AI_PROMPT, A.GEN_AI_COMPLETION,
}  # fmt: skip


OPERATION = A.GEN_AI_OPERATION_NAME  # what nearly every GenAI span carries


def is_genai(attrs: Mapping[str, Any]) -> bool:
    return (
        A.GEN_AI_OPERATION_NAME in attrs
        or A.GEN_AI_REQUEST_MODEL in attrs
        or A.GEN_AI_SYSTEM in attrs
        or A.GEN_AI_PROVIDER_NAME in attrs
    )


def convention_of(name: str, attrs: Mapping[str, Any]) -> str:
    """Who wrote a GenAI-named span: litellm's callback, OpenLLMetry, or any GenAI emitter."""
    if "litellm.call_id" in attrs or name == "litellm_request":
        return "litellm"
    if "llm.request.type" in attrs:
        return "openllmetry"
    return "gen_ai"


def role_of(name: str, attrs: Mapping[str, Any]) -> Role | None:
    operation = attrs.get(A.GEN_AI_OPERATION_NAME)
    if operation is None:
        operation = attrs.get("llm.request.type")  # OpenLLMetry before operation names existed
    if isinstance(operation, str):
        role = _ROLE_BY_OPERATION.get(operation)
        if role is not None:
            return role
        if operation in _NOT_STEPS:
            return None
        if operation == "completion":
            return LLM
    if A.GEN_AI_REQUEST_MODEL in attrs or A.GEN_AI_RESPONSE_MODEL in attrs:
        return LLM
    if A.GEN_AI_TOOL_NAME in attrs:
        return TOOL
    if A.GEN_AI_AGENT_NAME in attrs:
        return AGENT
    return None


def fill(span: Any, name: str, attrs: Mapping[str, Any], limit: int) -> Role | None:
    """Set the GenAI span's fields on ``span``; its role, or ``None`` (nothing set) when it
    is not a step or an agent run."""
    operation = attrs.get(A.GEN_AI_OPERATION_NAME)
    role = _ROLE_BY_OPERATION.get(operation) if type(operation) is str else None  # the usual case of role_of
    if role is None:
        role = role_of(name, attrs)
        if role is None:
            return None
    span.role = role
    span.convention = convention_of(name, attrs)
    conversation = attrs.get(A.GEN_AI_CONVERSATION_ID)
    if conversation is not None:
        span.conversation_id = as_text(conversation)
    if role is LLM:
        _llm(span, attrs, limit)
    elif role is TOOL:
        span.tool_name = as_name(attrs.get(A.GEN_AI_TOOL_NAME)) or _name_after(name, A.OP_EXECUTE_TOOL)
        call_id = attrs.get(A.GEN_AI_TOOL_CALL_ID)
        if call_id is not None:
            span.tool_call_id = call_id if type(call_id) is str else as_text(call_id)
        description = attrs.get(A.GEN_AI_TOOL_DESCRIPTION)
        if description is not None:
            span.tool_description = as_name(description)
        args, result = attrs.get(A.GEN_AI_TOOL_CALL_ARGUMENTS), attrs.get(A.GEN_AI_TOOL_CALL_RESULT)
        if args is not None or result is not None:  # content capture is usually off: nothing to set
            set_tool_content(span, args, result, limit)
        for key in registry().tool_status_keys:  # a framework's own status attribute
            status = attrs.get(key)
            if status is not None and isinstance(status, str) and status.lower() in ("error", "failed", "failure") and not span.error:
                span.error, span.error_type = True, "tool_status_error"
    else:
        span.agent_name = as_name(attrs.get(A.GEN_AI_AGENT_NAME)) or _name_after(name, A.OP_INVOKE_AGENT)
        reasons = attrs.get(AGENT_FINISH_REASON, attrs.get(A.GEN_AI_RESPONSE_FINISH_REASONS))
        if reasons is not None:  # why the run ended (``limit_turns``), read for termination
            span.finish_reasons = as_str_tuple(reasons)
        inputs = parse_messages(attrs.get(A.GEN_AI_INPUT_MESSAGES))
        outputs = parse_messages(attrs.get(A.GEN_AI_OUTPUT_MESSAGES))
        frameworks = registry()
        task = (first_text(inputs, "user") or last_text(inputs)) if inputs else \
            next((t for key in frameworks.agent_task_keys if (t := as_text(attrs.get(key))) is not None), None)
        # the answer is what the agent said, not the tool results its output may carry along
        answer = last_text([m for m in outputs if not _carries_results(m)]) if outputs else None
        if answer is None:  # a framework's own attribute for it
            answer = next((a for key, read in frameworks.agent_answers
                           if key in attrs and (a := read(attrs[key])) is not None), None)
        set_agent_content(span, task, answer, limit)
    return role


def _carries_results(message: Message) -> bool:
    """A tool's message, or one handing tool results on: what the tools said, not the agent."""
    return message.role == "tool" or any(result is not None for _, _, result in message.exchanges)


def _llm(span: Any, attrs: Mapping[str, Any], limit: int) -> None:
    get = attrs.get
    span.request_model, span.model, span.provider = _model_names(
        get(A.GEN_AI_REQUEST_MODEL), get(A.GEN_AI_RESPONSE_MODEL), get(A.GEN_AI_PROVIDER_NAME) or get(A.GEN_AI_SYSTEM))
    tokens = get(A.GEN_AI_USAGE_INPUT_TOKENS, get(A.GEN_AI_USAGE_PROMPT_TOKENS))
    if tokens is not None:
        span.input_tokens = tokens if type(tokens) is int else as_int(tokens)
    tokens = get(A.GEN_AI_USAGE_OUTPUT_TOKENS, get(A.GEN_AI_USAGE_COMPLETION_TOKENS))
    if tokens is not None:
        span.output_tokens = tokens if type(tokens) is int else as_int(tokens)
    reasons = get(A.GEN_AI_RESPONSE_FINISH_REASONS)
    if reasons is not None:
        span.finish_reasons = as_str_tuple(reasons)
    for key, answer_tools in registry().answer_tool_keys:  # a framework's own list of the answer tools offered
        parameters = get(key)
        if parameters is not None:
            span.answer_tools = answer_tools(parameters)

    if attrs.keys().isdisjoint(_CONTENT_KEYS):
        return  # content capture off: nothing more to read
    value = get(A.GEN_AI_INPUT_MESSAGES)
    read = _inputs_read(value, limit) if type(value) is str and value else None  # the shortcuts path
    inputs = read.messages if read is not None else parse_messages(value)
    if inputs is None and not attrs.keys().isdisjoint(_PROMPT_PROBES):
        inputs = flattened_messages(attrs, "gen_ai.prompt.")
    if inputs is None:
        inputs = parse_messages(get(A.GEN_AI_PROMPT))
    outputs = parse_messages(get(A.GEN_AI_OUTPUT_MESSAGES))
    if not attrs.keys().isdisjoint(_COMPLETION_PROBES):
        flat = flattened_messages(attrs, "gen_ai.completion.")
        if not outputs:
            outputs = flat
        elif not requested_tools(outputs) and requested_tools(flat):
            # litellm: text in gen_ai.output.messages, tool calls only in the flattened form
            outputs = outputs + [Message("", "", requested_tools(flat))]
    if outputs is None:
        outputs = parse_messages(get(A.GEN_AI_COMPLETION))
    if inputs:
        span.input_message_count = len(inputs)
        span.input_text = read.rendered if read is not None else render(inputs, limit)
        span.tools_offered = TOOL_DEFINITIONS in attrs
    if outputs:
        span.requested_tools = requested_tools(outputs)
        span.output_text = render(outputs, limit)
    if read is not None:
        exchanges = add_exchanges(dict(read.exchanges), outputs or ()) or None
    else:
        exchanges = tool_exchanges((inputs or []) + (outputs or []))
    if exchanges:
        span.tool_exchanges = exchanges


def _model_names(request: Any, response: Any, provider: Any) -> tuple[str | None, str | None, str | None]:
    """A model call's request model, model (the response's, folded) and provider.

    Every call of a deployment names the same few, so answers are remembered by the three
    values when each is a short string or absent (a string never equals a number, so ``1``
    never finds the answer of ``1.0``); bounded."""
    key = (request, response, provider)
    try:
        known = _MODEL_NAMES.get(key)
    except TypeError:  # an array or a map: not remembered
        known, hashable = None, False
    else:
        hashable = True
    if known is not None:
        return known
    request_model = as_name(request)
    found = request_model, fold(as_name(response) or request_model), as_name(provider)
    if hashable and all(value is None or (type(value) is str and len(value) <= NAME_CHARS) for value in key):
        if len(_MODEL_NAMES) >= _MAX_MODEL_NAMES:
            _MODEL_NAMES.clear()  # start over rather than grow
        _MODEL_NAMES[key] = found
    return found


_MODEL_NAMES: dict[tuple[Any, Any, Any], tuple[str | None, str | None, str | None]] = {}  # bounded
_MAX_MODEL_NAMES = 1024


def _name_after(span_name: str, operation: str) -> str | None:
    """``execute_tool kubectl_get`` -> ``kubectl_get`` (the GenAI span-name pattern)."""
    head, _, rest = span_name.partition(" ")
    return as_name(rest.strip()) if head == operation and rest.strip() else None


def parse_messages(value: Any) -> list[Message] | None:
    """GenAI messages (parts format or OpenAI chat format), from JSON or structured values.

    A plain string that is not JSON counts as one message of unknown role.
    """
    if value is None or value == "":
        return None
    if type(value) is list:  # structured messages (events lend them so)
        store = kept(parse_messages)
        if store is not None:
            return [_known_message(item, store) if type(item) is dict else _message(item) for item in value]
    return _messages_of(maybe_json(value))


def _known_message(item: dict[str, Any], store: dict[Any, Any]) -> Message:
    """``_message(item)``, once per message object while a content memo is held: the messages events
    lend are handed out again for every later call of the run (see ``events._message``), and
    nothing writes into a message once made. Known by the object itself (kept in ``store`` with
    its reading, so no other object takes its id while it is there)."""
    found = store.get(id(item))
    if found is not None and found[0] is item:
        return found[1]
    message = _message(item)
    if len(store) >= MAX_VALUES:
        store.clear()  # start over rather than grow
    store[id(item)] = (item, message)
    return message


def _messages_of(parsed: Any) -> list[Message]:
    """:func:`parse_messages` of a value, given what :func:`maybe_json` made of it."""
    if isinstance(parsed, dict):
        parsed = parsed.get("messages", [parsed])
    if not isinstance(parsed, list):
        return [Message("", as_text(parsed) or "")]
    return [_message(item) for item in parsed]


def _message(item: Any) -> Message:
    if not isinstance(item, dict):
        return Message("", as_text(item) or "")
    role = str(item.get("role") or "")
    texts: list[str] = []
    tools: list[str] = []
    exchanges: list[tuple[str, Any, Any]] = []
    parts = item.get("parts")
    if isinstance(parts, list):
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "tool_call":
                if part.get("name"):
                    tools.append(str(part["name"]))
                if part.get("id"):
                    exchanges.append((str(part["id"]), part.get("arguments"), None))
            elif kind == "tool_call_response":
                texts.append(as_text(part.get("response")) or "")
                if part.get("id"):
                    exchanges.append((str(part["id"]), None, part.get("response")))
            elif part.get("content") is not None:
                texts.append(as_text(part["content"]) or "")
    content = item.get("content")
    if content is not None:
        texts.append(as_text(content) or "")
        if role == "tool" and item.get("tool_call_id"):
            exchanges.append((str(item["tool_call_id"]), None, content))
    calls = item.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict):
            function = call.get("function")
            tool = function.get("name") if isinstance(function, dict) else call.get("name")
            if tool:
                tools.append(str(tool))
            if call.get("id"):
                exchanges.append((str(call["id"]), function.get("arguments") if isinstance(function, dict) else call.get("arguments"), None))
    # (most messages hold one text and no tool calls: no generators for them)
    text = texts[0] if len(texts) == 1 else "\n".join([t for t in texts if t])
    return Message(role, text, tuple([as_name(t) or t for t in tools]) if tools else (), tuple(exchanges) if exchanges else ())


def flattened_messages(attrs: Mapping[str, Any], prefix: str) -> list[Message]:
    """``gen_ai.prompt.N.role``/``.content``, ``gen_ai.completion.N.tool_calls.M.name``,
    ``gen_ai.completion.N.function_call.name`` (the deprecated flattened form)."""
    messages = []
    for group in indexed(attrs, prefix):
        tools = [as_name(call.get("name")) for call in indexed(group, "tool_calls.")]
        if group.get("function_call.name"):
            tools.append(as_name(group["function_call.name"]))
        content = group.get("content")
        messages.append(
            Message(str(group.get("role") or ""), as_text(content) or "", tuple(t for t in tools if t))
        )
    return messages


# --- the shortcuts path (a content memo held): a run's next model call, read from its last one ---


class _Read(NamedTuple):
    """A model call's input messages (a JSON text) as read: kept, while the request is decoded, for
    the run's next call, whose input messages are usually these and a few more."""

    text: str
    messages: list[Message]
    rendered: str | None  # render(messages, limit)
    size: int  # the length of their lines joined, uncut (-1: no line); past the cap, at least the cap
    exchanges: Exchanges  # add_exchanges({}, messages)


_HEAD = 64  # read calls are found by their first characters (and the cap): a longer call begins with them too
_READ_PER_HEAD = 8
_MAX_HEADS = 256


def _inputs_read(text: str, limit: int) -> _Read | None:
    """The input messages ``text`` holds, their text and their tool calls, as the plain reading makes
    them; ``None`` while no content memo is held (or for a negative cap, which cuts from the end).

    A JSON array that is an earlier call's array with more items (``[a, b]`` then ``[a, b, c, d]``:
    the earlier text but its closing bracket, a comma, then the new items) is read from where the
    earlier one ended: JSON reads an array's items each on its own, so the items are the earlier
    ones and those of ``[c, d]``, and the messages, text and tool calls follow from the earlier
    ones as :func:`render` and :func:`add_exchanges` would go on from them."""
    store = kept(_inputs_read)
    if store is None or limit < 0:
        return None
    head = (limit, text[:_HEAD])
    earlier: list[_Read] | None = store.get(head) if len(text) > _HEAD else None
    found = None
    for old in reversed(earlier or ()):
        end = len(old.text)
        if len(text) > end and text[end - 1] == "," and text.startswith(old.text[:-1]):
            try:
                items = json_loads("[" + text[end:])
            except (ValueError, RecursionError):
                break
            if isinstance(items, list) and items:  # (``[a, b,]`` is no array: no items after the comma)
                more = [_message(item) for item in items]
                rendered, size = _render_more(old.rendered, old.size, more, limit)
                found = _Read(text, old.messages + more, rendered, size, add_exchanges(dict(old.exchanges), more))
            break
    if found is None:
        parsed = maybe_json(text)
        messages = _messages_of(parsed)
        rendered, size = _render_more(None, -1, messages, limit)
        found = _Read(text, messages, rendered, size, add_exchanges({}, messages))
        if not (isinstance(parsed, list) and parsed and text[-1] == "]"):
            return found  # nothing a later call's messages can begin with
    if len(text) > _HEAD:
        if earlier is None:
            if len(store) >= _MAX_HEADS:
                store.clear()  # start over rather than grow
            earlier = store[head] = []
        elif len(earlier) >= _READ_PER_HEAD:
            del earlier[0]
        earlier.append(found)
    return found


def _render_more(rendered: str | None, size: int, messages: list[Message], limit: int) -> tuple[str | None, int]:
    """:func:`render` of earlier messages and ``messages``, given the earlier ones' (``rendered``,
    ``size``: see :class:`_Read`); the earlier text is whole while it is shorter than the cap."""
    if size >= limit:
        return rendered, size  # the cap is reached: nothing more shows
    lines = [f"{m.role}: {m.text}" if m.role else m.text for m in messages if m.text]
    if not lines:
        return rendered, size
    joined = "\n".join(lines) if rendered is None else rendered + "\n" + "\n".join(lines)
    return cap(joined, limit), len(joined)
