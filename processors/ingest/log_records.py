"""OTLP log records as events: the form in which GenAI instrumentations send content as logs.

A record carries the trace and span id of the call it belongs to; read as an
:data:`~mast_otel.processors.ingest.normalize.events.Event`, it lends that span content exactly as
the same event on the span would. Only records whose name starts with ``gen_ai.`` are GenAI
events; the others are counted and dropped by the caller.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from mast_otel.processors.ingest.normalize.events import Event

GENAI_PREFIX = "gen_ai."
_EVENT_NAME_KEYS = ("event.name", "gen_ai.event.name")  # where SDKs before OTLP's event_name field put it
MAX_DEPTH = 16  # nested arrays and maps deeper than this are read as nothing


def record_event(name: str | None, attributes: Mapping[str, Any], body: Any) -> Event:
    """One log record as an event: named by its ``event_name`` (else the ``event.name`` or
    ``gen_ai.event.name`` attribute), with its attributes and, where they do not already hold
    the key, its body's fields (a body that is not a map goes under ``content``)."""
    attrs = dict(attributes)
    if not name:
        name = next((found for key in _EVENT_NAME_KEYS if isinstance(found := attrs.get(key), str) and found), "")
    if isinstance(body, dict):
        for key, value in body.items():
            attrs.setdefault(key, value)
    elif body is not None and body != "" and body != [] and body != b"":
        attrs.setdefault("content", body)
    return name, attrs


def is_genai(event: Event) -> bool:
    return event[0].startswith(GENAI_PREFIX)


@dataclass(slots=True)
class JoinableRecord:
    """A GenAI record read from an OTLP/JSON logs document, with the span it belongs to (hex ids;
    empty when the record names none)."""

    trace_id: str
    span_id: str
    event: Event


@dataclass(slots=True)
class RecordCounts:
    """What a logs document held: GenAI records, and records that are not GenAI events (dropped)."""

    genai: int = 0
    other: int = 0
    records: list[JoinableRecord] = field(default_factory=list)


def json_log_records(doc: Mapping[str, Any], counts: RecordCounts | None = None) -> RecordCounts:
    """The GenAI records of an OTLP/JSON ``ExportLogsServiceRequest`` (``{"resourceLogs": [...]}``),
    camelCase or snake_case keys, ids in hex (or base64). Unreadable entries are skipped."""
    counts = counts if counts is not None else RecordCounts()
    for rl in _items(doc, "resourceLogs", "resource_logs"):
        for sl in _items(rl, "scopeLogs", "scope_logs"):
            for record in _items(sl, "logRecords", "log_records"):
                attrs = {kv["key"]: json_any_value(kv.get("value"))
                         for kv in record.get("attributes") or () if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
                name = _get(record, "eventName", "event_name")
                event = record_event(name if isinstance(name, str) else None, attrs, json_any_value(record.get("body")))
                if not is_genai(event):
                    counts.other += 1
                    continue
                counts.genai += 1
                counts.records.append(JoinableRecord(_hex(_get(record, "traceId", "trace_id")),
                                                     _hex(_get(record, "spanId", "span_id")), event))
    return counts


def is_logs_document(value: Any) -> bool:
    return isinstance(value, dict) and ("resourceLogs" in value or "resource_logs" in value)


def json_any_value(value: Any, depth: int = 0) -> Any:
    """An OTLP/JSON ``AnyValue`` as Python: ``kvlistValue`` a dict, ``arrayValue`` a list,
    ``bytesValue`` its base64 text, int64 given as a string an int."""
    if not isinstance(value, dict) or depth > MAX_DEPTH:
        return None
    for key, item in value.items():
        if key in ("stringValue", "string_value", "boolValue", "bool_value", "doubleValue", "double_value",
                   "bytesValue", "bytes_value"):
            return item
        if key in ("intValue", "int_value"):
            try:
                return int(item)
            except (TypeError, ValueError):
                return None
        if key in ("arrayValue", "array_value") and isinstance(item, dict):
            return [json_any_value(v, depth + 1) for v in item.get("values") or ()]
        if key in ("kvlistValue", "kvlist_value") and isinstance(item, dict):
            return {kv["key"]: json_any_value(kv.get("value"), depth + 1)
                    for kv in item.get("values") or () if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
    return None


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _items(obj: Any, camel: str, snake: str) -> Iterator[dict[str, Any]]:
    found = _get(obj, camel, snake) if isinstance(obj, dict) else None
    return (item for item in found if isinstance(item, dict)) if isinstance(found, list) else iter(())


def _hex(value: Any) -> str:
    """A hex id as lowercase hex, a base64 one (generic protobuf JSON) too; empty when there is none."""
    if not isinstance(value, str) or not value or len(value) > 64:
        return ""
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return ""
    return "" if not raw.strip(b"\x00") else raw.hex()
