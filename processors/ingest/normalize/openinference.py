"""OpenInference (Arize Phoenix): ``openinference.span.kind`` picks the role.

Model calls carry ``llm.*`` attributes and flattened messages
(``llm.input_messages.N.message.role``, ``...message.contents.M.message_content.text``,
``llm.output_messages.N.message.tool_calls.M.tool_call.function.name``); tools and agents carry
their content in ``input.value`` / ``output.value``. ``tool.parameters`` is the tool's
parameter schema, not a call's arguments, so it is not hashed.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Mapping

from mast_otel.processors.ingest.normalize.common import (    Message,
    as_int,
    as_name,
    as_str_tuple,
    as_text,
    cap,
    indexed,
    maybe_json,
    render,
    requested_tools,
    set_agent_content,
    set_tool_content,
)
from mast_otel.processors.frameworks import on_reload, registry
from mast_otel.processors.tools.content_memo import MAX_VALUES, held, kept
from mast_otel.processors.hints.model_names import fold
from mast_otel.processors.model import AGENT, LLM, TOOL, Role

SPAN_KIND = "openinference.span.kind"
# Instrumented methods name agent spans ``sre_agent.run``, ``operator.<a framework's own method>``:
# the agent is the part before. A GenAI-style name (``invoke_agent agent``) names the agent after
# the operation.
_METHODS = ("run", "_run", "arun", "invoke", "ainvoke", "execute", "call", "__call__", "step", "stream", "chat", "achat",
            "run_stream")
_ROLES = {"LLM": LLM, "TOOL": TOOL, "AGENT": AGENT}


@on_reload
@functools.cache
def _method_suffix() -> re.Pattern[str]:
    """The generic methods and every framework's own, as one pattern (built at first use)."""
    methods = dict.fromkeys((*_METHODS, *registry().agent_methods))
    return re.compile(r"\.(%s)$|^invoke_agent " % "|".join(map(re.escape, methods)))


def fill(span: Any, name: str, attrs: Mapping[str, Any], limit: int) -> Role | None:
    """Set an LLM, tool or agent span's fields on ``span``; its role, or ``None`` (nothing set)."""
    kind = attrs.get(SPAN_KIND)
    role = _ROLES.get(kind.upper()) if isinstance(kind, str) else None
    if role is None:
        if kind != "CHAIN" or span.parent_span_id is not None:
            return None
        role = AGENT  # a framework's parentless chain is its run (some frameworks write no AGENT span)
        span.workflow = True
    span.role = role
    span.convention = "openinference"
    session = attrs.get("session.id")
    if session is not None:
        span.conversation_id = as_text(session)
    if role is LLM:
        _llm(span, attrs, limit)
    elif role is TOOL:
        span.tool_name = as_name(attrs.get("tool.name")) or as_name(name)
        member = _graph_member(attrs)  # a graph agent's tools run outside its agent span
        if member is not None:
            span.agent_name = member
        description = attrs.get("tool.description")
        if description is not None:
            span.tool_description = as_name(description)
        set_tool_content(span, attrs.get("input.value"), attrs.get("output.value"), limit)
    else:
        span.agent_name = as_name(attrs.get("agent.name")) or _graph_member(attrs) or _node_prefix(name, attrs) \
            or as_name(_method_suffix().sub("", name) or name)
        output = attrs.get("output.value")
        frameworks = registry()
        answer = next((a for read in frameworks.agent_output_answers if (a := read(output)) is not None), None) \
            if output is not None else None  # a framework's output value read as its answer (a graph's state)
        set_agent_content(span, as_text(attrs.get("input.value")), answer or as_text(output), limit)
        for key, family in frameworks.step_budget_keys:
            budget = attrs.get(key)
            if budget is not None and (steps := as_int(budget)) is not None and steps > 0:
                # the framework's own step budget, stated with content on or off, counted in its unit
                span.hints.max_steps, span.hints.budget_framework = steps, family
    return role


def _node_prefix(name: str, attrs: Mapping[str, Any]) -> str | None:
    """The agent a span named ``<agent>.<anything>`` stands for when its graph node is that agent
    (``<Role>.<task name>``, ``<agent>.on_messages_stream``)."""
    node = attrs.get("graph.node.id")
    if type(node) is str and node and name.startswith(node) and name[len(node):len(node) + 1] == ".":
        return as_name(node)
    return None


def _graph_member(attrs: Mapping[str, Any]) -> str | None:
    """A graph node's team member, read from a node's metadata by the framework whose marker it holds."""
    metadata = attrs.get("metadata")
    if not isinstance(metadata, str):
        return None
    for marker, member_of in registry().members:
        if marker in metadata:
            parsed = maybe_json(metadata)
            return as_name(member_of(parsed)) if isinstance(parsed, dict) else None
    return None


def _llm(span: Any, attrs: Mapping[str, Any], limit: int) -> None:
    span.model = model = as_name(attrs.get("llm.model_name"))
    params = attrs.get("llm.invocation_parameters")
    if params is not None:
        model = _model_in(params) or model
    span.request_model = model
    span.model = fold(span.model or model)
    span.provider = as_name(attrs.get("llm.provider") or attrs.get("llm.system"))
    tokens = attrs.get("llm.token_count.prompt")
    if tokens is not None:
        span.input_tokens = as_int(tokens)
    tokens = attrs.get("llm.token_count.completion")
    if tokens is not None:
        span.output_tokens = as_int(tokens)
    reason = attrs.get("llm.finish_reason")
    if reason is not None:
        span.finish_reasons = as_str_tuple(reason)
    for key, answer_tools in registry().answer_tool_keys:  # OpenInference over a framework's own spans
        parameters = attrs.get(key)
        if parameters is not None:
            span.answer_tools = answer_tools(parameters)

    if held():  # the shortcuts path: the same fields, from one pass over the keys (see _both_sides)
        _both_sides(span, attrs, limit)
        return
    inputs, span.input_text = _content(attrs, _INPUT, limit)
    if inputs is not None:
        span.input_message_count = len(inputs)
        span.tools_offered = "llm.tools.0.tool.json_schema" in attrs
    outputs, span.output_text = _content(attrs, _OUTPUT, limit)
    if outputs is not None:
        span.requested_tools = requested_tools(outputs)


def _model_in(params: Any) -> str | None:
    """The model a call's invocation parameters name (a JSON object's ``model``), if any; read once
    per request for each text while a content memo is held (a run's calls repeat their parameters)."""
    store = kept(_model_in) if type(params) is str else None
    if store is None:
        return _read_model(params)
    found = store.get(params, _UNREAD)
    if found is _UNREAD:
        if len(store) >= MAX_VALUES:
            store.clear()  # start over rather than grow
        found = store[params] = _read_model(params)
    return found


_UNREAD = object()


def _read_model(params: Any) -> str | None:
    parsed = maybe_json(params)
    return as_name(parsed.get("model")) if isinstance(parsed, dict) else None


# (messages prefix, the keys whose presence says messages were captured, whole-value key)
_INPUT = ("llm.input_messages.", ("llm.input_messages.0.message.role", "llm.input_messages.0.message.content"), "input.value")
_OUTPUT = ("llm.output_messages.", ("llm.output_messages.0.message.role", "llm.output_messages.0.message.content"), "output.value")


def _content(attrs: Mapping[str, Any], side: tuple[str, tuple[str, str], str], limit: int) -> tuple[list[Message] | None, str | None]:
    """One side of a model call: its messages and their text, or just the whole value's text."""
    prefix, probes, whole = side
    if probes[0] in attrs or probes[1] in attrs:
        found = messages(attrs, prefix)
        return found, render(found, limit)
    value = attrs.get(whole)
    return None, (cap(as_text(value), limit) if value is not None else None)


def messages(attrs: Mapping[str, Any], prefix: str) -> list[Message]:
    """The flattened messages under ``prefix`` (``prefix.N.message.role``, ``.content``,
    ``.contents.M.message_content.text``, ``.tool_calls.M.tool_call.function.name``).

    One pass over the span's keys groups them by message, as :func:`indexed` does, and notes
    which messages hold parts or tool calls; only those are grouped again (most hold a role and
    a text only), so each key is looked at once."""
    start = len(prefix)
    groups: dict[int, dict[str, Any]] = {}
    nested: set[int] = set()  # messages with content parts or tool calls
    for key, value in attrs.items():
        if key.startswith(prefix):
            index, _, rest = key[start:].partition(".")
            if rest and index.isdecimal():  # what int() reads (``isdigit`` also takes "²", which it does not)
                number = int(index)
                group = groups.get(number)
                if group is None:
                    group = groups[number] = {}
                group[rest] = value
                if rest.startswith(_NESTED):
                    nested.add(number)
    result = []
    for number in sorted(groups):
        group = groups[number]
        content = group.get("message.content")
        if number not in nested:
            result.append(Message(str(group.get("message.role") or ""), (as_text(content) or "") if content is not None else ""))
            continue
        text = as_text(content) if content is not None else "\n".join(
            as_text(part.get("message_content.text")) or ""
            for part in indexed(group, "message.contents.")
            if part.get("message_content.text") is not None
        )
        tools = tuple(
            name
            for call in indexed(group, "message.tool_calls.")
            if (name := as_name(call.get("tool_call.function.name")))
        )
        result.append(Message(str(group.get("message.role") or ""), text or "", tools))
    return result


_NESTED = ("message.contents.", "message.tool_calls.")


# --- the shortcuts path (a content memo held): the fields _content and messages give, more cheaply ---

_SIDES = (_INPUT[0], _OUTPUT[0])


def _both_sides(span: Any, attrs: Mapping[str, Any], limit: int) -> None:
    """What the plain path sets from both sides' messages, with no ``Message`` built and the text
    of the input messages past ``limit`` never made (only their count is read).

    Which key holds what (each message's role, content, parts and tool calls, in order) depends
    on the keys alone, and a deployment's model calls come with the same few key lists again and
    again: it is worked out once per list of keys (:func:`_plan`) and each message's values are
    then looked up, not found by going over every key."""
    keys = tuple(attrs)
    plan = _PLANS.get(keys)
    if plan is None:
        plan = _plan(keys, attrs)
    get = attrs.get
    inputs, outputs, offered = plan
    if inputs is not None:
        span.input_message_count = len(inputs)
        span.input_text = _read(get, inputs, limit, False)[0]
        span.tools_offered = offered
    else:
        value = get(_INPUT[2])
        span.input_text = cap(as_text(value), limit) if value is not None else None
    if outputs is not None:
        span.output_text, span.requested_tools = _read(get, outputs, limit, True)
    else:
        value = get(_OUTPUT[2])
        span.output_text = cap(as_text(value), limit) if value is not None else None


# one message's keys: role, content (either ``None`` when absent), whether it holds content parts or
# tool calls, its parts' text keys and its tool calls' name keys (each in the order of their numbers)
_MessageKeys = tuple[str | None, str | None, bool, tuple[str, ...], tuple[str, ...]]
# a span's keys read: each side's messages in the order of their numbers (``None``: that side's messages
# were not captured, its whole value is read instead) and whether tools were offered
_Plan = tuple[tuple[_MessageKeys, ...] | None, tuple[_MessageKeys, ...] | None, bool]


def _plan(keys: tuple[str, ...], attrs: Mapping[str, Any]) -> _Plan:
    """Where a span with these keys (in this order) holds its messages, as :func:`messages` groups
    them: a message's key found twice (``.1.`` and ``.01.`` name one message) is the later key's,
    as is a part's; remembered (bounded by the keys' length in all)."""
    sides: tuple[dict[int, dict[str, str]], dict[int, dict[str, str]]] = ({}, {})
    nested: tuple[set[int], set[int]] = (set(), set())
    known = _MESSAGE_KEYS.get
    for key in keys:
        found = known(key)
        if found is None:
            found = _message_key(key)
        if found is _NO_MESSAGE:
            continue
        side, number, rest, parts = found
        groups = sides[side]
        group = groups.get(number)
        if group is None:
            group = groups[number] = {}
        group[rest] = key
        if parts:
            nested[side].add(number)
    read: list[tuple[_MessageKeys, ...] | None] = [None, None]
    for side, (_, probes, _) in enumerate((_INPUT, _OUTPUT)):
        if probes[0] in attrs or probes[1] in attrs:
            groups, parted = sides[side], nested[side]
            read[side] = tuple([
                _message_keys(group) if number in parted
                else (group.get("message.role"), group.get("message.content"), False, (), ())
                for number in sorted(groups) for group in (groups[number],)])
    plan: _Plan = (read[0], read[1], "llm.tools.0.tool.json_schema" in attrs)
    global _PLANS_CHARS
    chars = sum(map(len, keys))
    if chars <= _MAX_PLAN_CHARS:
        if _PLANS_CHARS + chars > _MAX_PLAN_CHARS or len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()  # start over rather than grow
            _PLANS_CHARS = 0
        _PLANS[keys] = plan
        _PLANS_CHARS += chars
    return plan


def _message_keys(group: dict[str, str]) -> _MessageKeys:
    """The keys of a message with content parts or tool calls (``group``: the rest of each key
    after the message's number -> the key)."""
    texts: dict[int, str] = {}
    names: dict[int, str] = {}
    known = _PART_KEYS.get
    for rest, key in group.items():
        found = known(rest)
        if found is None:
            found = _part_key(rest)
        if found is not _NO_PART:
            (texts if found[0] else names)[found[1]] = key
    return (group.get("message.role"), group.get("message.content"), True,
            tuple([texts[n] for n in sorted(texts)]), tuple([names[n] for n in sorted(names)]))


_PLANS: dict[tuple[str, ...], _Plan] = {}  # a span's keys -> where its messages are; bounded
_PLANS_CHARS = 0  # the keys' characters the plans hold
_MAX_PLANS = 1024
_MAX_PLAN_CHARS = 1 << 20  # about a thousand model calls' keys


def _read(get: Callable[[str], Any], messages: tuple[_MessageKeys, ...], limit: int,
          with_tools: bool) -> tuple[str | None, tuple[str, ...]]:
    """One side's text (as :func:`render` makes it) and requested tools (when ``with_tools``) from
    its messages' keys (``get``: the span's attributes'); no text is made once ``limit`` characters are."""
    lines: list[str] = []
    size = -1  # the length of the lines joined
    enough = limit if limit >= 0 else _NO_LIMIT  # (a negative cap cuts from the end: every line counts)
    tools: list[str] = []
    for role_key, content_key, nested, text_keys, name_keys in messages:
        if size >= enough:
            if not with_tools:
                break
            if not nested:
                continue
        content = get(content_key) if content_key is not None else None
        if nested:
            text = (as_text(content) if content is not None else "\n".join(
                [as_text(part) or "" for key in text_keys if (part := get(key)) is not None])) or ""
            if name_keys:
                tools += [name for key in name_keys if (name := as_name(get(key)))]
        else:
            text = (as_text(content) or "") if content is not None else ""
        if text and size < enough:
            role = get(role_key) if role_key is not None else None
            role = str(role or "")
            line = f"{role}: {text}" if role else text
            lines.append(line)
            size += len(line) + 1
    return cap("\n".join(lines), limit) if lines else None, tuple(tools)


_NO_LIMIT = 1 << 62
# key -> (side, message number, the rest of the key, whether it is a content part or a tool call), or
# _NO_MESSAGE for a key of no message; bounded
_MESSAGE_KEYS: dict[str, tuple[int, int, str, bool]] = {}
_NO_MESSAGE = (-1, -1, "", False)
_MAX_MESSAGE_KEYS = 8192


# a message's key (its rest) -> (True for a content part's text, False for a tool call's name, its number),
# or _NO_PART for any other key; bounded
_PART_KEYS: dict[str, tuple[bool, int]] = {}
_NO_PART = (False, -1)
_PART_FIELDS = (("message.contents.", "message_content.text"), ("message.tool_calls.", "tool_call.function.name"))


def _part_key(rest: str) -> tuple[bool, int]:
    """What a message's key says of a content part's text or a tool call's name (read as
    :func:`indexed` reads it), remembered."""
    found = _NO_PART
    for prefix, field in _PART_FIELDS:
        if rest.startswith(prefix):
            index, _, tail = rest[len(prefix):].partition(".")
            if tail == field and index.isdecimal():
                found = prefix is _PART_FIELDS[0][0], int(index)
            break
    if len(_PART_KEYS) >= _MAX_MESSAGE_KEYS:
        _PART_KEYS.clear()  # start over rather than grow
    _PART_KEYS[rest] = found
    return found


def _message_key(key: str) -> tuple[int, int, str, bool]:
    """What a key says of a message (read as :func:`messages` reads it), remembered."""
    found = _NO_MESSAGE
    for side, prefix in enumerate(_SIDES):
        if key.startswith(prefix):
            index, _, rest = key[len(prefix):].partition(".")
            if rest and index.isdecimal():
                found = side, int(index), rest, rest.startswith(_NESTED)
            break
    if len(_MESSAGE_KEYS) >= _MAX_MESSAGE_KEYS:
        _MESSAGE_KEYS.clear()  # start over rather than grow
    _MESSAGE_KEYS[key] = found
    return found
