"""Value coercion and message helpers shared by the convention normalizers.

Attribute values arrive as whatever the emitter chose (an int as a string, a list as a JSON
string, a bool as ``"true"``); these helpers turn them into the types ``Span`` holds, never
raising on odd input.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any, Callable, Iterable, Mapping, NamedTuple

from mast_otel.processors.hints.notes import note
from mast_otel.processors.tools.content_memo import content_hash, failure_in, held
from mast_otel.processors.tools.json_text import loads as json_loads, may_be_json
from mast_otel.processors.tools.values import without_bare_text
from mast_otel.processors.model import RunHints, Span

CONTENT_CHARS = 8192  # default cap on every content field of a Span
NAME_CHARS = 256  # cap on names (model, agent, tool): they become metric labels

_intern = sys.intern


class Message(NamedTuple):
    """One chat message, convention-independent: who said it, its text, tools it asked for,
    and the tool calls it carries by id: ``(id, arguments, result)``, either side ``None``."""

    role: str
    text: str
    tool_calls: tuple[str, ...] = ()
    exchanges: tuple[tuple[str, Any, Any], ...] = ()


EXCHANGE_CHARS = 2048  # cap on a tool result kept from a conversation (enough for a check's verdict)


# call id -> (arguments hash, result hash, result text)
Exchanges = dict[str, tuple[str | None, str | None, str | None]]


def tool_exchanges(messages: Iterable[Message]) -> Exchanges | None:
    """Tool calls seen in a model call's messages, by call id: (arguments hash, result hash,
    result text). Frameworks whose tool spans carry no arguments or results still
    show them here, so the tool spans can get them back by their call id."""
    return add_exchanges({}, messages) or None


def add_exchanges(found: Exchanges, messages: Iterable[Message]) -> Exchanges:
    """``found`` (what :func:`tool_exchanges` made of earlier messages) with ``messages``' tool
    calls added, as if they had followed those messages; ``found`` itself, changed."""
    for m in messages:
        for call_id, args, result in m.exchanges:
            old = found.get(call_id, (None, None, None))
            args_hash = content_hash(args) if args not in (None, "") and not redacted(args) else old[0]
            if result not in (None, "") and not redacted(result):
                found[call_id] = (args_hash, content_hash(result), cap(as_text(result), EXCHANGE_CHARS))
            else:
                found[call_id] = (args_hash, old[1], old[2])
    return found


def as_int(value: Any) -> int | None:
    if type(value) is int:  # the usual case first: these run for every span
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def as_float(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def as_bool(value: Any) -> bool | None:
    if value is True or value is False:
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no"):
            return False
    if isinstance(value, int):
        return bool(value)
    return None


def as_name(value: Any, limit: int = NAME_CHARS) -> str | None:
    """A short identifier (model, tool, agent name): capped and interned, since it repeats."""
    if type(value) is str and 0 < len(value) <= limit:
        return _intern(value)
    if value is None or value == "":
        return None
    text = value if isinstance(value, str) else str(value)
    return _intern(text[:limit])


def as_str_tuple(value: Any) -> tuple[str, ...]:
    """A string array, a JSON-encoded array, or a comma-separated string.

    The same few arrays (finish reasons, requested tools, constraints) arrive on span after
    span, so answers are remembered by the value: a string as itself, a list as the tuple of
    its items. Only all-string tuples are stored, and a string never equals a number, so a
    list of numbers (where ``1 == 1.0 == True``) never finds another list's answer; long
    values are not stored.
    """
    kind = type(value)
    key = tuple(value) if kind is list else value if kind is str else None
    if key is not None:
        try:
            known = _STR_TUPLES.get(key)
        except TypeError:  # nested arrays or maps: not remembered
            return _as_str_tuple(value)
        if known is not None:
            return known
    found = _as_str_tuple(value)
    if key is not None and _short_strings(key):
        if len(_STR_TUPLES) >= _MAX_STR_TUPLES:
            _STR_TUPLES.clear()  # start over rather than grow
        _STR_TUPLES[key] = found
    return found


def _short_strings(key: str | tuple[Any, ...]) -> bool:
    if type(key) is str:
        return len(key) <= NAME_CHARS
    return len(key) <= _MAX_STR_TUPLE_ITEMS and all(type(item) is str and len(item) <= NAME_CHARS for item in key)


_STR_TUPLES: dict[str | tuple[Any, ...], tuple[str, ...]] = {}  # bounded
_MAX_STR_TUPLES = 4096
_MAX_STR_TUPLE_ITEMS = 32


def _as_str_tuple(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            parsed = maybe_json(stripped)
            if isinstance(parsed, list):
                value = parsed
            else:
                return ()
        else:
            return tuple(_intern(part.strip()) for part in stripped.split(",") if part.strip())
    if isinstance(value, (list, tuple)):
        return tuple([name for item in value if (name := as_name(item)) is not None])
    return (str(value),)


def maybe_json(value: Any) -> Any:
    """``value`` parsed if it is a JSON string, else ``value`` itself (a text read through
    :mod:`~mast_otel.processors.tools.json_text` while a content memo is held: the same value)."""
    if isinstance(value, (str, bytes)):
        if type(value) is str and held():
            if not may_be_json(value):
                return value  # (no JSON document starts so: json.loads would only fail on it)
            try:
                return json_loads(value)
            except (ValueError, RecursionError):
                return value
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def as_text(value: Any) -> str | None:
    """A content value as text: strings as they are, structures as compact JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    try:
        return "".join(_COMPACT(value, 0)) if _COMPACT is not None else \
            json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


# ``json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)``'s C encoder, made once
# (json.dumps makes an encoder on every call); without the map of containers being encoded, a cycle
# ends in RecursionError rather than ValueError, read the same above.
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)  # json's own, undeclared; None without its C module
_COMPACT = (
    _c_make_encoder(None, str, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    if _c_make_encoder is not None else None
)


def cap(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit]


def indexed(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Flattened arrays (``prefix.0.role``, ``prefix.0.content``, ...) as a list of dicts."""
    start = len(prefix)
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if key.startswith(prefix):
            index, _, rest = key[start:].partition(".")
            if rest and index.isdecimal():  # what int() reads (``isdigit`` also takes "²", which it does not)
                groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


def render(messages: Iterable[Message], limit: int) -> str | None:
    """Messages as ``role: text`` lines, capped; ``None`` when there is no text at all."""
    lines = [f"{m.role}: {m.text}" if m.role else m.text for m in messages if m.text]
    return cap("\n".join(lines), limit) if lines else None


def requested_tools(messages: Iterable[Message]) -> tuple[str, ...]:
    return tuple(name for m in messages for name in m.tool_calls)


def first_text(messages: Iterable[Message], role: str) -> str | None:
    return next((m.text for m in messages if m.role == role and m.text), None)


def last_text(messages: Iterable[Message]) -> str | None:
    texts = [m.text for m in messages if m.text]
    return texts[-1] if texts else None


def set_tool_content(span: Any, args: Any, result: Any, limit: int) -> None:
    """Set a tool call's content fields, with hashes computed from the content itself.

    Hashes are taken of the :func:`canonical` value (framework envelopes and per-call ids
    removed) with the instrumentation's own function, so a run hashed at the source and one
    hashed here compare equal; ``mast.tool.*_hash`` hints, when present, override these. A
    result that reports a failure as a value marks the call failed (a derived hint).
    """
    if args is not None and redacted(args):
        args = None
    if result is not None and redacted(result):
        result = None
    if args is not None and args != "":
        span.args_hash = content_hash(args)
        span.tool_args = cap(as_text(args), limit)
    if result is not None and result != "":
        span.result_hash = content_hash(result)
        text = span.tool_result = cap(as_text(result), limit)
        if not span.error:
            if text is result and type(span) is Span and held():
                # the shortcuts path: the reading hint derivation takes too (``bare_text``), kept with the
                # step (``Span.result_reading``); the reading of a value, bare reports aside, is the same
                bare = failure_in(result, bare_text=True)
                span.result_reading = (text, bare)
                reason = without_bare_text(bare)
            else:
                reason = failure_in(result)
            if reason is not None:
                span.error, span.error_type = True, "returned_error"
                note(span, "error", f"the call failed: {reason}")


# What instrumentations write in place of content when capture is off (OpenInference, GenAI instrumentations, ...):
# never content, so never hashed (every call would look the same) nor read.
REDACTION_MARKERS = frozenset({"__REDACTED__", "[REDACTED]", "<REDACTED>", "REDACTED", "[redacted]", "<redacted>"})


def redacted(value: Any) -> bool:
    return type(value) is str and len(value) < 16 and value.strip() in REDACTION_MARKERS


def set_agent_content(span: Any, task: str | None, final_answer: str | None, limit: int) -> None:
    """Set an agent span's request and answer, both as content fields and as run hints."""
    task = None if redacted(task) else task
    final_answer = None if redacted(final_answer) else final_answer
    span.input_text = task = cap(task, limit)
    span.output_text = final_answer = cap(final_answer, limit)
    span.hints = RunHints(task=task, final_answer=final_answer)


# (attribute, Span field, converter, the type the converter returns unchanged) entries,
# applied in order; built by :func:`table`
Table = tuple[tuple[str, str, Callable[[Any], Any], type | None], ...]

# Converters that hand back a value of this type as it is.
_UNCHANGED: dict[Callable[[Any], Any], type] = {as_int: int, as_text: str, as_bool: bool}


def table(*entries: tuple[str, str, Callable[[Any], Any]]) -> Table:
    """(attribute, Span field, converter) entries as a :data:`Table`."""
    return tuple((key, field, convert, _UNCHANGED.get(convert)) for key, field, convert in entries)


def apply_table(target: Any, attrs: Mapping[str, Any], entries: Table) -> None:
    """On ``target`` (a ``Span`` or its ``RunHints``), set ``field`` to ``convert(value)``
    for each entry whose attribute is present; absent ones leave the field as it was.

    Values the decoder already typed as the converter would (an int for ``as_int``) are set
    without the call: most hints arrive that way, on every step."""
    get = attrs.get
    for key, field, convert, unchanged in entries:
        value = get(key)
        if value is not None:
            setattr(target, field, value if type(value) is unchanged else convert(value))


class Fields:
    """Stands in for a ``Span``: records the fields a normalizer sets, in a plain dict.

    The decoder hands normalizers the ``Span`` itself; ``normalize()`` hands them this, so
    both run the same code and the pure API still returns only the fields that were set.
    """

    __slots__ = ("values",)

    def __init__(self) -> None:
        object.__setattr__(self, "values", {})

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in SPAN_FIELDS:
            raise AttributeError(f"Span has no field {name!r}")
        self.values[name] = value

    def __getattr__(self, name: str) -> Any:
        return self.values.get(name)


SPAN_FIELDS = frozenset(f.name for f in dataclasses.fields(Span))
