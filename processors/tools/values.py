"""What a tool call really took and returned, without the wrapping frameworks add.

Frameworks wrap tool arguments and results in per-call envelopes: a tool message
(``{"content": ..., "tool_call_id": "call_...", "status": ...}``, often inside a message
dump), an instrumentation's callback records, tool-use ids in content blocks. Hashing the
envelope makes every call look new, so loops go unseen. Each framework declares its own
envelopes and id prefixes in its table (``processors/frameworks/<family>/``); the generic
shapes (content blocks, ``toolResult`` blocks, MCP results) are here. :func:`canonical` unwraps the envelope and drops per-call
identifiers; :func:`error_in` reads a failure the tool returned as a value. Pure functions.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from typing import Any

from mast_otel.processors.frameworks import on_reload, registry
from mast_otel.processors.frameworks.table import NOT_AN_ENVELOPE
from mast_otel.processors.tools.json_text import loads as json_loads
from mast_otel.processors.tools.python_literal import NOT_RESPELLED, respelled_value

# Keys whose values identify one call, run or request, never what the tool did.
VOLATILE_KEYS = frozenset({
    "tool_call_id", "call_id", "toolUseId", "tool_use_id", "toolCallId", "run_id", "parent_run_id",
    "trace_id", "span_id", "request_id", "invocation_id", "event_id",
})  # fmt: skip
# An ``id`` value of these shapes is a generated call or message id (call_..., toolu_..., a UUID);
# frameworks add their own prefixes.
_ID_PREFIXES = ("call", "toolu", "tooluse", "run", "chatcmpl", "resp", "fc", "msg")


@on_reload
@functools.cache
def _generated_id() -> re.Pattern[str]:
    prefixes = dict.fromkeys((*_ID_PREFIXES, *registry().generated_id_prefixes))
    return re.compile(r"^(%s)[-_][\w-]+$|" % "|".join(map(re.escape, prefixes)) +
                      r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)


_BLOCK_ENVELOPE = frozenset({"content", "status", "toolUseId", "isError", "is_error", "structuredContent"})
# Keys a tool's value is often returned under, alone: ``{"result": ...}``, ``{"output": ...}``.
RESULT_WRAPPERS = frozenset({"result", "results", "output", "outputs", "content", "text", "data", "response",
                             "value", "body", "message", "observation", "return_value"})
_ERROR_STATUSES = frozenset({"error", "failed", "failure", "fail"})
# How frameworks hand a tool's raised exception back to the model: their own wording, whatever the tool reads.
_FRAMEWORK_ERROR_TEXT = re.compile(
    r"^\s*(error:?\s*)?(error (executing|running|calling|invoking) tool\b|"
    r"an error occurred while (running|executing|calling) the tool\b)", re.IGNORECASE)
# A bare report of failure: a failure from a tool that acts, but from a read tool it is what was read
# (a log line "ERROR 2026-01-01 connection refused"): read only with ``error_in(..., bare_text=True)``.
_ERROR_TEXT = re.compile(r"^\s*(error\b|an error occurred|exception\b|traceback \(most recent call last\))", re.IGNORECASE)
MAX_DEPTH = 6


def parsed(value: Any, *, fast: bool = False) -> Any:
    """A JSON (or Python-literal, as some callbacks print dicts) string as its value; ``fast``
    reads the JSON through :mod:`.json_text` and a Python literal through :mod:`.python_literal`
    (the same value, sooner)."""
    if not isinstance(value, str) or value[:1] not in "{[\"":
        return value
    if fast:
        return read_text(value)[0]
    try:
        return json.loads(value)
    except json.JSONDecodeError as error:
        if _cut_short(value, error):
            return value
    except (ValueError, RecursionError):
        pass
    if value[:1] in "{[" and len(value) < 65536:
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value


def read_text(text: str) -> tuple[Any, bool]:
    """``parsed(text, fast=True)``, and whether ``ast`` read it: then the text may spell the value's
    strings otherwise than they are (Python joins adjacent strings: ``'i' 'd'`` is ``'id'``)."""
    if text[:1] not in "{[\"":
        return text, False
    try:
        return json_loads(text), False
    except json.JSONDecodeError as error:
        if _cut_short(text, error):
            return text, False
    except (ValueError, RecursionError):
        pass
    if text[:1] in "{[" and len(text) < 65536:
        value = respelled_value(text)
        if value is not NOT_RESPELLED:
            return value, False
        try:
            return ast.literal_eval(text), True
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return text, False
    return text, False


def _cut_short(text: str, error: json.JSONDecodeError) -> bool:
    """JSON that was cut off (a capped text): valid up to a string that never ends, or up to the
    end. Python reads JSON's strings, numbers and brackets as the same tokens, so the text is no
    Python literal either: ``ast`` would only fail on it, slowly (a capped text is long)."""
    return error.msg == "Unterminated string starting at" or error.pos >= len(text)


def canonical(value: Any) -> Any:
    """The value with framework envelopes unwrapped and per-call ids removed."""
    return _strip(_unwrap(parsed(value)), 0)


def canonical_spelled(value: Any, spelling: str | bytes | None) -> Any:
    """``canonical(value)``, where ``spelling`` spells out every text ``value`` holds, keys included:
    the text ``value`` was read from as JSON (or a Python literal respelled as JSON: not one ``ast``
    read, see :func:`read_text`), or its ``marshal`` bytes; ``None`` when none is known. When no
    envelope comes off and the spelling holds no "id" or "Id" (one of which every key :func:`_strip`
    drops holds) nor, in a text, a backslash (an escape could spell a key otherwise), nothing would be
    stripped: the value itself, not a copy of it, is its canonical form (the fast path's hashes)."""
    unwrapped = _unwrap(parsed(value))
    if unwrapped is value and spelling is not None and _keeps_every_key(spelling):
        return value
    return _strip(unwrapped, 0)


def _keeps_every_key(spelling: str | bytes) -> bool:
    """Whether :func:`_strip` keeps every key of a value so spelled (each key it drops holds "id" or "Id")."""
    if type(spelling) is str:
        return "id" not in spelling and "Id" not in spelling and "\\" not in spelling
    return b"id" not in spelling and b"Id" not in spelling  # (marshal writes a text's own characters: no escapes)


def peeled(value: Any) -> Any:
    """The canonical value with single-key result wrappers (``{"result": ...}``) peeled off,
    so what the tool said is read whatever key its framework or author returned it under.
    (Hashes keep the wrapper: :func:`canonical` must match what the instrumentation hashed.)"""
    value = canonical(value)
    for _ in range(MAX_DEPTH):
        if not (isinstance(value, dict) and len(value) == 1):
            break
        key = next(iter(value))
        if key not in RESULT_WRAPPERS:
            break
        value = canonical(value[key])
    return value


def _unwrap(value: Any) -> Any:
    frameworks = registry()
    keys = frameworks.envelope_keys
    for _ in range(4):  # envelopes nest (an output record around a tool message)
        if isinstance(value, list):
            if len(value) == 1 and isinstance(value[0], dict) and isinstance(value[0].get("toolResult"), dict):
                value = value[0]
                continue
            text = _text_blocks(value)
            if text is None:
                return value
            value = parsed(text)
            continue
        if not isinstance(value, dict):
            return value
        if not keys.isdisjoint(value):  # a framework's own record (most values are none: told in C)
            inner = _inside(value, frameworks.envelopes)
            if inner is not NOT_AN_ENVELOPE:
                value = parsed(inner)
                continue
        if len(value) == 1 and isinstance(value.get("toolResult"), dict):  # a toolResult block
            value = value["toolResult"]
        if isinstance(value.get("content"), list) and value.keys() <= _BLOCK_ENVELOPE:  # MCP / content-block result
            text = _text_blocks(value["content"])
            if text is not None:
                value = parsed(text)
                continue
        inner = _inside(value, frameworks.closing_envelopes) if not keys.isdisjoint(value) else NOT_AN_ENVELOPE
        if inner is NOT_AN_ENVELOPE:
            return value
        value = parsed(inner)
    return value


def _inside(value: dict, envelopes: tuple) -> Any:
    """What the first envelope that fits ``value`` wraps, or ``NOT_AN_ENVELOPE``."""
    for key, unwrap in envelopes:
        if key in value:
            inner = unwrap(value)
            if inner is not NOT_AN_ENVELOPE:
                return inner
    return NOT_AN_ENVELOPE


def _text_blocks(blocks: list[Any]) -> str | None:
    """The text of a content-block list (``[{"text": ...}]``, ``[{"type": "text", "text": ...}]``)."""
    if not blocks or not all(isinstance(b, dict) and isinstance(b.get("text"), str) and b.keys() <= {"text", "type"}
                             for b in blocks):
        return None
    return "\n".join(b["text"] for b in blocks)


def _strip(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, dict):  # (what is neither a map nor a list is kept as it is: no call for it)
        return {k: _strip(v, depth + 1) if isinstance(v, _CONTAINERS) else v for k, v in value.items()
                if k not in VOLATILE_KEYS and not (k == "id" and isinstance(v, str) and _generated_id().match(v))}
    if isinstance(value, list):
        return [_strip(v, depth + 1) if isinstance(v, _CONTAINERS) else v for v in value]
    return value


_CONTAINERS = (dict, list)  # what _strip reads into


def error_in(value: Any, *, bare_text: bool = False) -> str | None:
    """Why a tool result reads as a failure, or ``None``.

    Whatever the tool: a structured error (``{"status": "error"}``, a non-empty ``error`` or an
    ``is_error`` field, a ToolMessage with status error) or a framework's words for a raised
    exception ("Error executing tool ..."). With ``bare_text`` also a text that starts with
    "Error", "Exception" or a traceback: how a tool that acts says it was refused, but from a
    read tool it is what was read (a log line), so callers set it for tools that are not reads.
    """
    if value is None:
        return None
    raw = parsed(value)
    if isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], dict) and isinstance(raw[0].get("toolResult"), dict):
        raw = raw[0]["toolResult"]
    if isinstance(raw, dict):  # a framework's dump around a tool message: the message, whose status is read
        for unwrap in registry().message_dumps:
            inner = unwrap(raw)
            if inner is not NOT_AN_ENVELOPE:
                raw = inner
                break
    if isinstance(raw, dict) and raw.get("status") == "error" and ("tool_call_id" in raw or "toolUseId" in raw):
        return "the tool message has status 'error'"
    if isinstance(raw, dict) and (raw.get("isError") is True or raw.get("is_error") is True):
        return "it returned is_error"
    value = _unwrap(raw)
    if isinstance(value, dict):
        status = value.get("status")
        if isinstance(status, str) and status.strip().lower() in _ERROR_STATUSES:
            return f"it returned status {status!r}"
        if value.get("is_error") is True or value.get("isError") is True:
            return "it returned is_error"
        error = value.get("error")
        if error not in (None, "", False, [], {}) and value.get("status") not in ("ok", "success"):
            return "it returned an error field"
        return None
    if isinstance(value, str):
        if _FRAMEWORK_ERROR_TEXT.match(value):
            return "its result text is the framework's report of a raised exception"
        if bare_text and _ERROR_TEXT.match(value):
            return BARE_TEXT_REPORT
    return None


# ``error_in``'s reason when only ``bare_text`` makes the value a failure: the one answer the two
# readings differ in, so one gives the other (``without_bare_text``).
BARE_TEXT_REPORT = "its result text reports an error"


def without_bare_text(reading: str | None) -> str | None:
    """``error_in(value)`` from ``error_in(value, bare_text=True)``: the same but for a bare report."""
    return None if reading == BARE_TEXT_REPORT else reading
