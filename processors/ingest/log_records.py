"""OTLP log records (``ExportLogsServiceRequest``, protobuf or OTLP/JSON) -> GenAI events by span.

Several GenAI instrumentations send message content not on spans but as log records carrying
the span's trace and span ids. Each record becomes an :data:`Event` (``record_event``) keyed by
``(trace id hex, span id hex)``, so the service can join it to its span. Records that are not
GenAI events (their name does not start with ``gen_ai.``) and GenAI records without a span id
are counted, not kept. A record that breaks the same bounds as a span's attributes (too many,
nested too deep, a NUL character) is rejected on its own, counted by reason; long strings and
arrays are truncated, as on spans. A body that cannot be read at all raises ``DecodeError``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from google.protobuf.message import DecodeError as _ProtobufError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from mast_otel.processors.ingest.decode import (
    ATTRIBUTE_TOO_DEEP, INVALID_UTF8, MALFORMED_SPAN, NUL_CHARACTER, TOO_MANY_ATTRIBUTES, DecodeError, DecodeOptions,
)
from mast_otel.processors.ingest.normalize.events import Event

GENAI_PREFIX = "gen_ai."
EVENT_NAME = "event.name"
GENAI_EVENT_NAME = "gen_ai.event.name"
TOO_MANY_RECORDS = "too_many_records"
# what one held event costs beyond its strings (tuple, dict, key objects), as the memory account counts it
EVENT_OVERHEAD_BYTES = 400
WIRE_MULTIPLE = 3
_DEFAULT_OPTIONS = DecodeOptions()
_ZERO_TRACE, _ZERO_SPAN = bytes(16), bytes(8)


class _Reject(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        self.reason, self.detail = reason, detail


@dataclass(frozen=True, slots=True)
class LogEvent:
    """One GenAI log record as the event of the span it names, with the bytes it holds."""

    trace_id: str
    span_id: str
    event: Event
    size: int


@dataclass(slots=True)
class LogBatch:
    """What a logs request held: its GenAI events, and the records not kept, by why."""

    events: list[LogEvent] = field(default_factory=list)
    records: int = 0  # every record of the request
    not_genai: int = 0  # acknowledged and dropped: not a GenAI event
    no_span_id: int = 0  # GenAI events that name no span (or no trace): nothing to join them to
    rejected: dict[str, int] = field(default_factory=dict)  # malformed records, by reason
    messages: list[str] = field(default_factory=list)  # first few rejection details

    def reject(self, reason: str, detail: str, options: DecodeOptions) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        if len(self.messages) < options.max_messages and detail not in self.messages:
            self.messages.append(detail)


def record_event(name: str, attributes: Mapping[str, Any], body: Any) -> Event:
    """A log record as an event: its name, its attributes with the body's keys added where
    absent (a body that is a map), or the body under ``content`` (any other non-empty body)."""
    attrs = dict(attributes)
    if isinstance(body, dict):
        for key, value in body.items():
            attrs.setdefault(key, value)
    elif body is not None and body != "" and body != [] and body != b"":
        attrs.setdefault("content", body)
    return name, attrs


def event_name(field_name: str, attributes: Mapping[str, Any]) -> str:
    """The record's event name: the LogRecord field (OTLP 1.5+), else ``event.name``, else ``gen_ai.event.name``."""
    if field_name:
        return field_name
    for key in (EVENT_NAME, GENAI_EVENT_NAME):
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def held_bytes(value: Any) -> int:
    """The bytes a decoded value holds, roughly: its strings' lengths and a little per container."""
    if isinstance(value, (str, bytes)):
        return len(value) + 50
    if isinstance(value, dict):
        return 64 + sum(len(k) + 50 + held_bytes(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return 56 + sum(held_bytes(v) for v in value)
    return 32


def _add(batch: LogBatch, trace_id: bytes | None, span_id: bytes | None, name: str, attrs: dict[str, Any], body: Any,
         wire_bytes: int = 0) -> None:
    """Keep a GenAI record (its name already checked) that names its span; count one that does not."""
    if (trace_id is None or len(trace_id) != 16 or trace_id == _ZERO_TRACE
            or span_id is None or len(span_id) != 8 or span_id == _ZERO_SPAN):
        batch.no_span_id += 1
        return
    event = record_event(name, attrs, body)
    # a protobuf record's decoded values hold at most a small multiple of its serialized size (as
    # for spans, see assembler.span_bytes); a JSON one's are counted
    size = WIRE_MULTIPLE * wire_bytes if wire_bytes else held_bytes(event[1])
    batch.events.append(LogEvent(trace_id.hex(), span_id.hex(), event, EVENT_OVERHEAD_BYTES + size))


def _describe(name: str, detail: str) -> str:
    return f"log record {name[:64]!r}: {detail}" if name else f"log record: {detail}"


# --- protobuf ------------------------------------------------------------------------------

def decode_logs_protobuf(body: bytes, options: DecodeOptions | None = None) -> LogBatch:
    """Decode a serialized ``ExportLogsServiceRequest``."""
    try:
        request = ExportLogsServiceRequest.FromString(body)
    except (_ProtobufError, RecursionError) as exc:
        raise DecodeError(str(exc) or "not an ExportLogsServiceRequest") from None
    return decode_logs_request(request, options)


def decode_logs_request(request: ExportLogsServiceRequest, options: DecodeOptions | None = None) -> LogBatch:
    """Decode an already parsed request."""
    o = options or _DEFAULT_OPTIONS
    batch = LogBatch()
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                batch.records += 1
                if batch.records > o.max_spans:
                    batch.reject(TOO_MANY_RECORDS, f"more than {o.max_spans} log records in one request", o)
                    continue
                try:
                    attrs = _proto_attributes(record.attributes, o)
                    name = event_name(record.event_name, attrs)
                    if not name.startswith(GENAI_PREFIX):  # the body of a record nobody reads is not read
                        batch.not_genai += 1
                        continue
                    body = _proto_value(record.body, 1, o, "body") if record.HasField("body") else None
                except _Reject as exc:
                    batch.reject(exc.reason, _describe(record.event_name, exc.detail), o)
                    continue
                _add(batch, record.trace_id, record.span_id, name, attrs, body, record.ByteSize())
    return batch


def _proto_attributes(kvs: Any, o: DecodeOptions) -> dict[str, Any]:
    if len(kvs) > o.max_attributes:
        raise _Reject(TOO_MANY_ATTRIBUTES, f"{len(kvs)} attributes, more than the limit of {o.max_attributes}")
    return {kv.key: _proto_value(kv.value, 1, o, kv.key) for kv in kvs}


def _proto_value(value: Any, depth: int, o: DecodeOptions, key: str) -> Any:
    text = value.string_value  # the usual kind, read without asking which kind is set
    if text:
        return _text(text, o, key)
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return _text(value.string_value, o, key)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value[: o.max_string_chars]).decode()
    if kind in ("int_value", "double_value", "bool_value"):
        return getattr(value, kind)
    if depth > o.max_value_depth:
        raise _Reject(ATTRIBUTE_TOO_DEEP, f"value nested deeper than {o.max_value_depth} levels")
    if kind == "array_value":
        return [_proto_value(item, depth + 1, o, key) for item in value.array_value.values[: o.max_array_items]]
    return {kv.key: _proto_value(kv.value, depth + 1, o, key) for kv in value.kvlist_value.values[: o.max_array_items]}


def _text(text: str, o: DecodeOptions, key: str) -> str:
    text = text if len(text) <= o.max_string_chars else text[: o.max_string_chars]
    if "\x00" in text:
        raise _Reject(NUL_CHARACTER, f"{key[:64]!r} holds a NUL character (U+0000), which the store cannot hold")
    return text


# --- OTLP/JSON -----------------------------------------------------------------------------

_JSON_KINDS = {"stringValue": "s", "string_value": "s", "intValue": "i", "int_value": "i", "doubleValue": "d",
               "double_value": "d", "boolValue": "b", "bool_value": "b", "bytesValue": "y", "bytes_value": "y",
               "arrayValue": "a", "array_value": "a", "kvlistValue": "k", "kvlist_value": "k"}


def decode_logs_json(body: bytes | str, options: DecodeOptions | None = None) -> LogBatch:
    """Decode an OTLP/JSON ``ExportLogsServiceRequest`` (ids in hex, as the OTLP spec says;
    base64 ids, as generic protobuf JSON writes them, are read too)."""
    o = options or _DEFAULT_OPTIONS
    try:
        doc = json.loads(body)
    except UnicodeDecodeError:
        raise DecodeError(f"{INVALID_UTF8}: the body is not UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"invalid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise DecodeError("the body is not an ExportLogsServiceRequest object")
    return decode_logs_document(doc, o)


def is_logs_document(value: Any) -> bool:
    """Whether a parsed JSON document is an ``ExportLogsServiceRequest`` (a logs file read offline)."""
    return isinstance(value, dict) and ("resourceLogs" in value or "resource_logs" in value)


def decode_logs_document(doc: Mapping[str, Any], options: DecodeOptions | None = None) -> LogBatch:
    """Decode an already parsed OTLP/JSON ``ExportLogsServiceRequest``."""
    o = options or _DEFAULT_OPTIONS
    batch = LogBatch()
    for resource_logs in _list(doc, "resourceLogs", "resource_logs"):
        for scope_logs in _list(resource_logs, "scopeLogs", "scope_logs"):
            for record in _list(scope_logs, "logRecords", "log_records"):
                batch.records += 1
                if batch.records > o.max_spans:
                    batch.reject(TOO_MANY_RECORDS, f"more than {o.max_spans} log records in one request", o)
                    continue
                if not isinstance(record, dict):
                    batch.reject(MALFORMED_SPAN, "a log record is not an object", o)
                    continue
                field_name = record.get("eventName", record.get("event_name")) or ""
                try:
                    if not isinstance(field_name, str):
                        raise _Reject(MALFORMED_SPAN, "eventName is not a string")
                    attrs = _json_attributes(record.get("attributes"), o)
                    name = event_name(field_name, attrs)
                    if not name.startswith(GENAI_PREFIX):
                        batch.not_genai += 1
                        continue
                    body = _json_value(record.get("body"), 1, o, "body")
                except _Reject as exc:
                    batch.reject(exc.reason, _describe(field_name if isinstance(field_name, str) else "", exc.detail), o)
                    continue
                _add(batch, _json_id(record.get("traceId", record.get("trace_id"))),
                     _json_id(record.get("spanId", record.get("span_id"))), name, attrs, body)
    return batch


def _list(obj: Any, camel: str, snake: str) -> list[Any]:
    if not isinstance(obj, dict):
        return []
    value = obj.get(camel, obj.get(snake))
    return value if isinstance(value, list) else []


def _json_id(value: Any) -> bytes | None:
    if not isinstance(value, str) or not value or len(value) > 64:
        return None
    try:
        return bytes.fromhex(value)
    except ValueError:
        pass
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        return None


def _json_attributes(kvs: Any, o: DecodeOptions) -> dict[str, Any]:
    if kvs is None:
        return {}
    if not isinstance(kvs, list):
        raise _Reject(MALFORMED_SPAN, "attributes must be an array of {key, value}")
    if len(kvs) > o.max_attributes:
        raise _Reject(TOO_MANY_ATTRIBUTES, f"{len(kvs)} attributes, more than the limit of {o.max_attributes}")
    out: dict[str, Any] = {}
    for kv in kvs:
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            raise _Reject(MALFORMED_SPAN, "an attribute is not a {key, value} object")
        out[kv["key"]] = _json_value(kv.get("value"), 1, o, kv["key"])
    return out


def _json_value(value: Any, depth: int, o: DecodeOptions, key: str) -> Any:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Reject(MALFORMED_SPAN, "a value is not an AnyValue object")
    for name, item in value.items():
        kind = _JSON_KINDS.get(name)
        if kind is None:
            continue
        if kind == "s" and isinstance(item, str):
            return _text(item, o, key)
        if kind == "i":
            if isinstance(item, int) and not isinstance(item, bool):
                return item
            if isinstance(item, str) and 0 < len(item) <= 21:
                try:
                    return int(item)
                except ValueError:
                    pass
        elif kind == "d" and isinstance(item, (int, float, str)) and not isinstance(item, bool):
            try:
                return float(item)
            except ValueError:
                pass
        elif kind == "b" and isinstance(item, bool):
            return item
        elif kind == "y" and isinstance(item, str):
            return item[: o.max_string_chars]  # already base64 text
        elif kind in ("a", "k") and isinstance(item, dict):
            if depth > o.max_value_depth:
                raise _Reject(ATTRIBUTE_TOO_DEEP, f"value nested deeper than {o.max_value_depth} levels")
            values = item.get("values") or []
            if not isinstance(values, list):
                raise _Reject(MALFORMED_SPAN, f"value {name} has no values array")
            values = values[: o.max_array_items]
            if kind == "a":
                return [_json_value(v, depth + 1, o, key) for v in values]
            return {kv["key"]: _json_value(kv.get("value"), depth + 1, o, key)
                    for kv in values if isinstance(kv, dict) and isinstance(kv.get("key"), str)}
        raise _Reject(MALFORMED_SPAN, f"value {name} has the wrong type")
    return None
