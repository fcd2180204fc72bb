"""OTLP trace bodies (protobuf or OTLP/JSON) -> normalized :class:`Span` records.

A body that cannot be read at all raises :class:`DecodeError` (HTTP 400, gRPC
INVALID_ARGUMENT). Anything wrong with one span (bad ids, no name, impossible times, too
many or too deeply nested attributes, invalid UTF-8, a NUL character the store cannot hold)
rejects that span only, counted by
reason, so its neighbours still count (OTLP partial success). Hostile input is bounded:
long strings and arrays are truncated, nesting depth and spans per body are capped.

Protobuf bodies are first parsed with span attributes (and status) left serialized, so each
distinct attribute is read once (see :mod:`.serialized_attributes`); bodies that path cannot read
exactly as OTLP's own types would (unparsable, invalid UTF-8, nesting near upb's limit) and
``keep_raw`` decoding take the general path. On every path a span's ``wire_bytes`` (its size in
the memory account) is its size as received, read from the body by a walk of its framing
(:func:`_span_sizes`); a body the walk does not follow, and a request parsed elsewhere (gRPC's
``decode_request``), size each span by ``ByteSize``, the same number for the usual encoding.

Every shortcut taken for speed sits behind one switch, ``DecodeOptions.fast`` (on by default):
the serialized-attributes path (its spans read in a loop of their own, each span's attributes
looked up in one call, an attribute kept once it came twice, longer ones once per request),
attribute kinds predicted from the last value under a key, flat string arrays read inline, the
span checks done in one expression before ``_check`` says what is wrong, OTLP/JSON text checked
for invalid UTF-8 span by span only when the body may hold some, long texts and status messages
in the canonical layout read straight from their bytes (``_Remembered._long_text``,
``_serialized_status``), and each distinct content text parsed, hashed and read for a failure
once per request (``processors/tools/content_memo.py``; while that memo is held the normalizers
take their own shortcuts too: ``normalize/genai.py``, ``normalize/openinference.py``). ``fast=False`` takes the plain path,
which gives the same result (tests compare the two on generated bodies and on every recorded
corpus).
"""

from __future__ import annotations

import base64
import binascii
import json
import sys
from contextvars import ContextVar
from dataclasses import dataclass, field
from operator import attrgetter
from itertools import repeat
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple

from google.protobuf.message import DecodeError as _ProtobufError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from mast_otel.wire import attributes as A
from mast_otel.processors.ingest.normalize import CONTENT_CHARS, normalize_into
from mast_otel.processors.ingest.normalize_failure import normalize_failure
from mast_otel.processors.tools.content_memo import remembering
from mast_otel.processors.ingest.normalize.events import Event, add_event_content, guard_interventions
from mast_otel.processors.ingest.serialized_attributes import request_type as _serialized_attributes_request
from mast_otel.processors.model import OTHER, Span

# Rejection reasons: the ``reason`` label of mast_spans_rejected_total.
INVALID_TRACE_ID = "invalid_trace_id"
INVALID_SPAN_ID = "invalid_span_id"
INVALID_PARENT_SPAN_ID = "invalid_parent_span_id"
MISSING_NAME = "missing_name"
INVALID_TIME = "invalid_time"
END_BEFORE_START = "end_before_start"
TIME_OUT_OF_RANGE = "time_out_of_range"
TOO_MANY_ATTRIBUTES = "too_many_attributes"
ATTRIBUTE_TOO_DEEP = "attribute_too_deep"
INVALID_UTF8 = "invalid_utf8"
NUL_CHARACTER = "nul_character"
MALFORMED_SPAN = "malformed_span"
TOO_MANY_SPANS = "too_many_spans"
NORMALIZE_FAILED = "normalize_failed"

_STATUS_ERROR = 2
_ZERO_TRACE = bytes(16)
_ZERO_SPAN = bytes(8)


class DecodeError(ValueError):
    """The whole body is unreadable; ``str(exc)`` is the reason to send back."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a span came from (serialized resource and scope), shared by a ScopeSpans' spans,
    so the service can re-export the original spans under their original resource."""

    resource: bytes
    scope: bytes
    resource_schema_url: str = ""
    scope_schema_url: str = ""


@dataclass(frozen=True, slots=True)
class WireSpan:
    """One span as it came over the wire (serialized protobuf) and its origin: what re-export
    copies out, kept beside the decoded ``Span`` (which holds no wire bytes)."""

    raw: bytes
    origin: Origin


@dataclass(slots=True)
class DecodeOptions:
    """Caps and switches for decoding; the defaults suit the service."""

    keep_raw: bool = False  # fill DecodeResult.wire (each span's serialized original); costs memory
    fast: bool = True  # take the shortcuts (see the module docstring); False: the plain path, same result
    content_chars: int = CONTENT_CHARS  # cap on each content field of a Span
    max_string_chars: int = 256 * 1024  # longer attribute strings are truncated, not rejected
    max_name_chars: int = 1024  # longer span names and status messages are truncated
    max_array_items: int = 1024  # longer attribute arrays are truncated
    max_attributes: int = 1024  # a span with more attributes is rejected
    max_value_depth: int = 8  # arrays/kvlists nested deeper reject the span
    max_spans: int = 100_000  # spans beyond this in one body are rejected
    min_time_ns: int = 946_684_800 * 10**9  # 2000-01-01: earlier timestamps are absurd
    max_time_ns: int = 4_102_444_800 * 10**9  # 2100-01-01
    max_messages: int = 10  # distinct rejection details kept for the response
    max_events: int = 128  # events read per span (exceptions, GenAI message events); later ones are ignored
    # GenAI log records that came before their span: trace id -> span id -> events, whose content the decode adds to the span
    pending_events: Mapping[str, Mapping[str, list[Event]]] | None = None


@dataclass(slots=True)
class DecodeResult:
    spans: list[Span] = field(default_factory=list)  # agent-related and pass-through (Role.OTHER)
    # with ``keep_raw``: each span's wire form, by position in ``spans``; otherwise empty
    wire: list[WireSpan] = field(default_factory=list)
    rejected: dict[str, int] = field(default_factory=dict)  # reason -> count
    messages: list[str] = field(default_factory=list)  # first few rejection details
    joined: dict[tuple[str, str], int] = field(default_factory=dict)  # (trace, span) -> held log records read as its events

    @property
    def rejected_count(self) -> int:
        return sum(self.rejected.values())

    @property
    def error_message(self) -> str:
        """The OTLP ``partial_success.error_message``: empty when nothing was rejected."""
        if not self.rejected:
            return ""
        counts = ", ".join(f"{reason}={count}" for reason, count in sorted(self.rejected.items()))
        details = "; ".join(self.messages)
        return f"rejected {self.rejected_count} span(s) ({counts}): {details}"


class _Reject(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        self.reason, self.detail = reason, detail


class _Reader(NamedTuple):
    """How to read one wire format's span: its attributes, and its events."""

    attributes: Callable[[Any, DecodeOptions], dict[str, Any]]
    events: Callable[[Any, DecodeOptions], list[Event]]


_DEFAULT_OPTIONS = DecodeOptions()
_ERROR_TYPE = A.ERROR_TYPE
_intern = sys.intern
# ``Span(...)`` in two steps: called from Python, the dataclass ``__init__`` (42 fields) runs in
# the decoder's own interpreter loop instead of through ``type.__call__``, about 10% cheaper.
_new_span, _init_span = object.__new__, Span.__init__


class _Builder:
    """Validates span fields, converts attributes, normalizes, and keeps the tally."""

    __slots__ = ("options", "result", "_hex")

    def __init__(self, options: DecodeOptions | None) -> None:
        self.options = options or _DEFAULT_OPTIONS
        self.result = DecodeResult()
        self._hex: dict[bytes, str] = {}  # trace and parent ids seen in this request, as hex

    def reject(self, reason: str, detail: str, count: int = 1) -> None:
        rejected = self.result.rejected
        rejected[reason] = rejected.get(reason, 0) + count
        messages = self.result.messages
        if len(messages) < self.options.max_messages and detail not in messages:
            messages.append(detail)

    def _new_id(self, raw: bytes, intern: Callable[[str], str] | None = None) -> str:
        """Hex of a trace or parent id, kept for the rest of the request: spans of a trace,
        and siblings, share one string."""
        text = raw.hex()
        self._hex[raw] = text = intern(text) if intern is not None else text
        return text

    def full(self) -> bool:
        if len(self.result.spans) < self.options.max_spans:
            return False
        self.reject(TOO_MANY_SPANS, f"more than {self.options.max_spans} spans in one request")
        return True

    def add(
        self,
        trace_id: bytes | None,
        span_id: bytes | None,
        parent_id: bytes | None,
        name: Any,
        start: int | None,
        end: int | None,
        error: bool,
        status_message: str,
        service: str | None,
        source: Any,
        reader: _Reader,
    ) -> Span | None:
        """One span, or ``None`` when it was rejected (and counted)."""
        o = self.options
        problem = _check(trace_id, span_id, parent_id, name, start, end, o)
        if problem is not None:
            reason, detail = problem
            self.reject(reason, _describe(name, span_id, detail))
            return None
        try:
            attrs = reader.attributes(source, o)
        except _Reject as exc:
            self.reject(exc.reason, _describe(name, span_id, exc.detail))
            return None
        try:
            events = reader.events(source, o)
        except _Reject:
            events = []  # unreadable events lose only what they would have added
        return self.build(trace_id, span_id, parent_id, name, start, end, error, status_message, service, attrs, events)  # type: ignore[arg-type]

    def build(
        self,
        trace_id: bytes,
        span_id: bytes,
        parent_id: bytes,
        name: str,
        start: int,
        end: int,
        error: bool,
        status_message: str,
        service: str | None,
        attrs: dict[str, Any],
        events: list[Event],
    ) -> Span | None:
        """The ``Span`` of a span whose fields passed :func:`_check`, normalized and kept;
        ``None`` when normalizing it failed (the span is rejected, see :func:`normalize_failure`)."""
        o = self.options
        ids = self._hex
        trace_hex = ids.get(trace_id) or self._new_id(trace_id, _intern)
        parent_hex = (ids.get(parent_id) or self._new_id(parent_id)) if parent_id and parent_id != _ZERO_SPAN else None
        name = _intern(name if len(name) <= o.max_name_chars else name[: o.max_name_chars])  # names repeat
        span = _new_span(Span)
        # the error (the status's) and service (the resource's) given with the identity, role, error type and status message as their defaults
        _init_span(span, trace_hex, span_id.hex(), parent_hex, name, start, end, OTHER, error, None, None, service)
        err_type = attrs.get(_ERROR_TYPE)
        if events:
            exception = _exception(events)
            if err_type is None and exception is not None:
                err_type = exception[0]
                if not status_message and exception[1]:
                    status_message = exception[1]
        if err_type is not None:
            span.error, span.error_type = True, str(err_type)[: o.max_name_chars]
        if status_message:  # free text: a NUL is replaced, the span kept
            span.status_message = status_message[: o.max_name_chars].replace("\x00", "\ufffd")
        joined = 0
        try:
            normalize_into(span, name, attrs, o.content_chars, events)
            pending = o.pending_events
            by_span = pending.get(trace_hex) if pending else None  # log records held: one look-up per span while there are any
            if by_span:
                held = by_span.get(span.span_id)
                if held:
                    add_event_content(span, list(held), o.content_chars, source="logs")
                    joined = len(held)
            if events:
                guarded = guard_interventions(span.span_id, events)
                if guarded:
                    span.guard_interventions = guarded
        except Exception as exc:  # a fault of ours on this span's content: it alone is refused, and said so
            self.reject(NORMALIZE_FAILED, _describe(name, span_id, normalize_failure(exc)))
            return None
        if joined:
            self.result.joined[(trace_hex, span.span_id)] = joined
        self.result.spans.append(span)
        return span


def _exception(events: list[Event]) -> tuple[str, str] | None:
    """The first ``exception`` event's type and message: the span failed even where its
    status was left unset (frameworks that record the error and carry on)."""
    for name, attrs in events:
        if name == "exception":
            kind = attrs.get("exception.type")
            message = attrs.get("exception.message")
            return (str(kind) if kind else "exception", message if isinstance(message, str) else "")
    return None


def _check(
    trace_id: bytes | None,
    span_id: bytes | None,
    parent_id: bytes | None,
    name: Any,
    start: int | None,
    end: int | None,
    o: DecodeOptions,
) -> tuple[str, str] | None:
    """The first thing wrong with a span's identity and timing, as (reason, detail)."""
    if trace_id is None or len(trace_id) != 16 or trace_id == _ZERO_TRACE:
        return INVALID_TRACE_ID, f"trace id must be 16 non-zero bytes (32 hex digits), got {_show_id(trace_id)}"
    if span_id is None or len(span_id) != 8 or span_id == _ZERO_SPAN:
        return INVALID_SPAN_ID, f"span id must be 8 non-zero bytes (16 hex digits), got {_show_id(span_id)}"
    if parent_id is None or (parent_id and len(parent_id) != 8):
        return INVALID_PARENT_SPAN_ID, f"parent span id must be empty or 8 bytes, got {_show_id(parent_id)}"
    if not name or not isinstance(name, str):
        return MISSING_NAME, "span has no name"
    if "\x00" in name:
        return NUL_CHARACTER, _NUL_DETAIL.format("its name")
    if not start or not end:
        return INVALID_TIME, "start and end times are required (Unix nanoseconds)"
    if end < start:
        return END_BEFORE_START, f"ends {start - end} ns before it starts"
    if start < o.min_time_ns or end > o.max_time_ns:
        return TIME_OUT_OF_RANGE, f"times {start}..{end} ns fall outside the accepted {o.min_time_ns}..{o.max_time_ns}"
    return None


_NUL_DETAIL = "{} holds a NUL character (U+0000), which the store cannot hold"


def _no_nul(key: str, text: str) -> str:
    """``text``, or the span's rejection when it holds a NUL (PostgreSQL text cannot)."""
    if "\x00" in text:
        raise _Reject(NUL_CHARACTER, _NUL_DETAIL.format(f"attribute {key[:64]!r}"))
    return text


def _show_id(value: bytes | None) -> str:
    if value is None:
        return "an unreadable value"
    return f"{len(value)} bytes" if len(value) > 32 else f"{value.hex() or 'nothing'} ({len(value)} bytes)"


def _describe(name: Any, span_id: bytes | None, detail: str) -> str:
    label = name[:64] if isinstance(name, str) and name else "?"
    sid = span_id.hex() if isinstance(span_id, bytes) and len(span_id) == 8 else "?"
    return f"span {label!r} ({sid}): {detail}"


# --- protobuf ------------------------------------------------------------------------------

_SCALAR_KINDS = frozenset({"int_value", "bool_value", "double_value"})
_CAPPED_KINDS = frozenset({"string_value", "bytes_value"})  # truncated to max_string_chars


def decode_protobuf(body: bytes, options: DecodeOptions | None = None) -> DecodeResult:
    """Decode a serialized ``ExportTraceServiceRequest``.

    If the body does not parse as a whole (say one span holds invalid UTF-8), its spans are
    salvaged one by one so only the broken ones are rejected.
    """
    o = options or _DEFAULT_OPTIONS
    with remembering(o.fast):
        if o.fast and not o.keep_raw:  # re-export copies the spans as parsed by OTLP's own types
            try:
                return _decode_serialized_attributes(body, options)
            except _NotFast:
                pass  # decoded again below, the same way as everything unusual
        try:
            request = ExportTraceServiceRequest.FromString(body)
        except _ProtobufError as exc:
            return _salvage(body, options, exc)
        except RecursionError:
            return _salvage(body, options, DecodeError("nesting too deep"))
        return _decode_parsed(request, options, _span_sizes(body, request))


class _NotFast(Exception):
    """The body needs the general path (it does not parse, or holds an attribute the
    serialized-attributes path does not read the same way)."""


def _decode_serialized_attributes(body: bytes, options: DecodeOptions | None) -> DecodeResult:
    """The common case of :func:`decode_protobuf`: the same result, with each distinct
    serialized attribute read once (see :mod:`serialized_attributes`)."""
    try:
        request = _serialized_attributes_request().FromString(body)
    except (_ProtobufError, RecursionError):
        raise _NotFast from None
    builder = _Builder(options)
    remembered = _remembered_for(builder.options)
    sizes = _span_sizes(body, request)
    if sizes is None:  # sized by ByteSize: this type's would miss an empty status the general path's counts
        raise _NotFast
    left = iter(sizes)
    token = _REQUEST_TEXTS.set({})
    try:
        for resource_spans in request.resource_spans:
            _decode_serialized_resource(builder, resource_spans.resource, [ss.spans for ss in resource_spans.scope_spans],
                                        remembered, left)
    finally:
        _REQUEST_TEXTS.reset(token)
    return builder.result


def _decode_serialized_resource(builder: _Builder, resource: Resource, scopes: list[Iterable[Any]], remembered: _Remembered,
                                sizes: Iterator[int]) -> None:
    """:func:`_decode_resource` for spans whose attributes and status are serialized: the same
    checks, in the same order, with what every span needs read at once and each span's
    attributes found by their bytes in one call (``dict(map(...))``: a known attribute costs
    no Python code at all)."""
    o = builder.options
    service = _service_name(resource)
    build, reject = builder.build, builder.reject
    decoded, max_spans, max_attributes = builder.result.spans, o.max_spans, o.max_attributes
    min_time, max_time = o.min_time_ns, o.max_time_ns
    lookup, readable = remembered.__getitem__, remembered.readable
    fields = _SERIALIZED_SPAN_FIELDS
    for spans in scopes:
        for sp, received in zip(spans, sizes):  # zip takes a size only for a span it has
            if len(decoded) >= max_spans and builder.full():
                readable(sp)
                continue
            trace_id, span_id, parent_id, name, start, end, kvs, status = fields(sp)
            if not (
                len(trace_id) == 16 and len(span_id) == 8 and (not parent_id or len(parent_id) == 8)
                and name and start and min_time <= start <= end <= max_time
                and trace_id != _ZERO_TRACE and span_id != _ZERO_SPAN and "\x00" not in name
            ):
                problem = _check(trace_id, span_id, parent_id, name, start, end, o)
                if problem is not None:
                    readable(sp)
                    reject(problem[0], _describe(name, span_id, problem[1]))
                    continue
            try:
                if len(kvs) > max_attributes:
                    raise _Reject(TOO_MANY_ATTRIBUTES, f"{len(kvs)} attributes, more than the limit of {max_attributes}")
                attrs = dict(map(lookup, kvs))  # a duplicate key: the last one, as a loop would keep
            except _Reject as exc:
                readable(sp)
                reject(exc.reason, _describe(name, span_id, exc.detail))
                continue
            events: list[Event] = _NO_EVENTS
            if sp.events:
                try:
                    events = _proto_events(sp, o)
                except _Reject:
                    pass  # unreadable events lose only what they would have added
            code, message = _serialized_status(status) if status else _NO_STATUS
            span = build(trace_id, span_id, parent_id, name, start, end, code == _STATUS_ERROR, message, service, attrs, events)
            if span is not None:
                span.wire_bytes = received  # sizes the span in the memory account without reading its strings


# what the serialized path reads of every span, in one call
_SERIALIZED_SPAN_FIELDS = attrgetter(
    "trace_id", "span_id", "parent_span_id", "name", "start_time_unix_nano", "end_time_unix_nano", "attributes", "status")


def decode_request(request: ExportTraceServiceRequest, options: DecodeOptions | None = None) -> DecodeResult:
    """Decode an already parsed request (the gRPC path)."""
    return _decode_parsed(request, options, None)


def _decode_parsed(request: ExportTraceServiceRequest, options: DecodeOptions | None, sizes: list[int] | None) -> DecodeResult:
    """:func:`decode_request`, each span sized by ``sizes`` (see :func:`_span_sizes`) when given."""
    builder = _Builder(options)
    left = iter(sizes) if sizes is not None else None
    with remembering(builder.options.fast):
        for resource_spans in request.resource_spans:
            scopes = [(ss.scope, ss.schema_url, ss.spans) for ss in resource_spans.scope_spans]
            _decode_resource(builder, resource_spans.resource, resource_spans.schema_url, scopes, left)
    return builder.result


def _decode_resource(
    builder: _Builder,
    resource: Resource,
    schema_url: str,
    scopes: Iterable[tuple[InstrumentationScope, str, Iterable[ProtoSpan]]],
    sizes: Iterator[int] | None = None,
) -> None:
    """Decode one ResourceSpans' spans (parsed by OTLP's own types); ``sizes`` holds each span's
    size as received, in order (else it is sized by ``ByteSize``)."""
    o = builder.options
    keep_raw, fast = o.keep_raw, o.fast
    service = _service_name(resource)
    resource_bytes = resource.SerializeToString() if keep_raw else b""
    build = builder.build
    decoded, max_spans = builder.result.spans, o.max_spans
    min_time, max_time = o.min_time_ns, o.max_time_ns
    read_attributes = _proto_attributes if fast else _plain_attributes
    read_events = _proto_events if fast else _plain_events
    received_sizes: Iterator[int | None] = sizes if sizes is not None else repeat(None)
    for scope, scope_schema_url, spans in scopes:
        origin = Origin(resource_bytes, scope.SerializeToString(), schema_url, scope_schema_url) if keep_raw else None
        for sp, received in zip(spans, received_sizes):  # zip takes a size only for a span it has
            if len(decoded) >= max_spans and builder.full():
                continue
            trace_id, span_id, parent_id = sp.trace_id, sp.span_id, sp.parent_span_id
            name, start, end = sp.name, sp.start_time_unix_nano, sp.end_time_unix_nano
            # The common case, every check of _check passing, in one expression; _check
            # runs only when something is wrong, to say what.
            if not fast or not (
                len(trace_id) == 16 and len(span_id) == 8 and (not parent_id or len(parent_id) == 8)
                and name and start and min_time <= start <= end <= max_time
                and trace_id != _ZERO_TRACE and span_id != _ZERO_SPAN and "\x00" not in name
            ):
                problem = _check(trace_id, span_id, parent_id, name, start, end, o)
                if problem is not None:
                    builder.reject(problem[0], _describe(name, span_id, problem[1]))
                    continue
            try:
                attrs = read_attributes(sp, o)
            except _Reject as exc:
                builder.reject(exc.reason, _describe(name, span_id, exc.detail))
                continue
            events: list[Event] = _NO_EVENTS
            if sp.events:
                try:
                    events = read_events(sp, o)
                except _Reject:
                    pass  # unreadable events lose only what they would have added
            status = sp.status
            span = build(trace_id, span_id, parent_id, name, start, end, status.code == _STATUS_ERROR, status.message,
                         service, attrs, events)
            if span is None:
                continue
            span.wire_bytes = sp.ByteSize() if received is None else received  # sizes the span in the memory account without reading its strings
            if keep_raw:
                builder.result.wire.append(WireSpan(sp.SerializeToString(), origin))  # type: ignore[arg-type]


_NO_EVENTS: list[Event] = []  # shared, never written: a span without events
_NO_STATUS = (0, "")


def _serialized_status(raw: bytes) -> tuple[int, str]:
    """A serialized ``Status`` in its canonical layout: message (field 2, its length saying
    where it ends), then code (field 3, one byte), either left out; anything else takes the
    general path, which reads it as upb does (or rejects the span for invalid UTF-8)."""
    message, at, size = "", 0, len(raw)
    if raw[0] == 0x12 and size >= 2:
        length = raw[1]
        at = 2
        if length >= 0x80:  # a message of 128 bytes or more (an error with its traceback)
            try:
                length, at = _varint(raw, 1)
            except _WireError:
                raise _NotFast from None
        end = at + length
        if end > size:
            raise _NotFast
        try:
            message = raw[at:end].decode()
        except UnicodeDecodeError:
            raise _NotFast from None
        at = end
    if at == size:
        return 0, message
    if at + 2 == size and raw[at] == 0x18 and raw[at + 1] < 0x80:
        return raw[at + 1], message
    raise _NotFast


def _service_name(resource: Resource) -> str | None:
    for kv in resource.attributes:
        if kv.key == "service.name":
            value = kv.value.string_value
            return _intern(value[:256].replace("\x00", "\ufffd")) if value else None
    return None


def _proto_attributes(sp: ProtoSpan, o: DecodeOptions) -> dict[str, Any]:
    """A span's attributes as a dict, in one pass; truncates long strings and arrays.

    Asking upb which kind an ``AnyValue`` holds costs more than reading the value, so each
    key's kind is predicted from the last value seen under that key: a non-empty value read
    from the predicted field is the field set (a oneof member that is not set reads as its
    default), and only empty or mispredicted values ask ``WhichOneof``.
    """
    kvs = sp.attributes
    if len(kvs) > o.max_attributes:
        raise _Reject(TOO_MANY_ATTRIBUTES, f"{len(kvs)} attributes, more than the limit of {o.max_attributes}")
    limit = o.max_string_chars
    predicted = _PREDICTED_KIND
    out: dict[str, Any] = {}
    for kv in kvs:
        key, value = kv.key, kv.value
        kind = predicted.get(key, "string_value")
        if kind == "array_value":
            items = value.array_value.values
            if items:
                out[key] = _proto_array(items, 1, o, key)
                continue
        else:
            item = getattr(value, kind)
            if item:
                if kind == "string_value":
                    text = item if len(item) <= limit else item[:limit]
                    if "\x00" in text:  # what is kept is checked, on every path alike
                        _no_nul(key, text)
                    out[key] = text
                else:
                    out[key] = item
                continue
        kind = value.WhichOneof("value")
        if kind in _PREDICTABLE_KINDS and len(predicted) < _MAX_PREDICTED:
            predicted[key] = kind
        if kind == "array_value":
            out[key] = _proto_array(value.array_value.values, 1, o, key)
        else:
            out[key] = _proto_value(value, 1, o, key)
    return out


class _Remembered(dict[bytes, tuple[str, Any]]):
    """Serialized ``KeyValue`` -> ``(key, value)``, read under one combination of caps (what a
    cap cuts differs between them). Only short attributes of immutable parts are kept (no cap
    can apply to them), and only once they came a second time: values that come once (ids,
    times, hashes) would fill the memory and have it start over, the ones that repeat with
    the rest. A kept array is one list shared by every span that holds it: the
    attributes a decoder hands the normalizers are read, never written, so a pair goes into a
    span's attributes as it is, without a look at its value. Bounded. Longer ones (content) are
    kept only until the request is decoded (``_REQUEST_TEXTS``): a model call's messages and a
    tool's arguments and result come again in the spans around it.

    The kept pairs are this dict's items, and one not kept is read by ``__missing__``: a span's
    attributes are ``dict(map(remembered.__getitem__, serialized))``, in C for every kept one."""

    __slots__ = ("caps", "heads", "misses", "unkept", "seen")

    def __init__(self, caps: DecodeOptions) -> None:
        super().__init__()
        self.caps = caps  # only the three caps that shape a value matter
        # a string attribute's bytes up to its text (key, and the text's length) -> the key:
        # the attributes whose values never repeat still have a few keys and lengths
        self.heads: dict[bytes, str] = {}
        # attribute key -> values read under it since the last clear; past _MAX_MISSES its
        # values are not kept (ids, hashes, counts): they would only crowd out the ones that repeat
        self.misses: dict[str, int] = {}
        self.unkept: set[str] = set()  # the keys past _MAX_MISSES
        self.seen: set[int] = set()  # hashes of the attributes read once and not kept (yet); bounded

    def readable(self, sp: Any) -> None:
        """Read the serialized parts of a span rejected before they were read (or while they
        were): one that upb could not parse sends the body down the general path, where the
        span does not parse, so it is rejected as unparsable there and here alike."""
        for raw in sp.attributes:
            try:
                self.read(raw)
            except _Reject:
                pass  # readable, only nested too deep
        if sp.status:
            _serialized_status(sp.status)

    def read(self, raw: bytes) -> tuple[str, Any]:
        """One attribute not kept, read as :func:`_proto_attributes` reads it, and kept when it may repeat.

        The usual one, a short string (an id, a hash), is read straight from the bytes when it
        has the one canonical layout: 0x0A len(key) key 0x12 len(text)+2 0x0A len(text) text,
        key and text under 126 bytes (each length one byte). Its key is found by the bytes
        before the text, which repeat where the text does not (one slice and one look-up in
        place of checking the layout and decoding the key). All in one function: this runs
        for every attribute whose values never repeat."""
        size = len(raw)
        if size > self.caps.max_string_chars:  # a cap may apply: read by upb, never kept
            return self._parse(raw)[0]
        if size > _REMEMBERED_BYTES:  # content, mostly: read once per request
            texts = _REQUEST_TEXTS.get()
            pair = texts.get(raw) if texts is not None else None
            if pair is None:
                pair = self._long_text(raw, size) if raw[0] == 0x0A and raw[1] < 0x80 else None
                kind: str | None = "string_value"
                if pair is None:
                    pair, kind = self._parse(raw)
                if texts is not None and _shareable(pair, kind):
                    if len(texts) >= _MAX_REMEMBERED:
                        texts.clear()
                    texts[raw] = pair
            return pair
        if size >= 6 and raw[0] == 0x0A and raw[1] < 126:
            start = raw[1] + 6  # where the text starts
            head = raw[:start]
            key = self.heads.get(head)
            if key is None or size - start != raw[start - 1]:  # not seen before, or more after the text
                key = None
                text_size = size - start
                if 0 <= text_size < 126 and raw[start - 4 : start] == _STRING_HEADERS[text_size]:
                    try:
                        key = raw[2 : start - 4].decode()
                    except UnicodeDecodeError:
                        raise _NotFast from None  # upb rejects it too: the general path says which span
                    heads = self.heads
                    if len(heads) >= _MAX_REMEMBERED:
                        heads.clear()
                    heads[head] = key
            if key is not None:
                try:
                    pair = key, raw[start:].decode()
                except UnicodeDecodeError:
                    raise _NotFast from None
                if "\x00" in pair[1]:
                    _no_nul(key, pair[1])
                if key not in self.unkept:
                    self._keep(raw, pair)
                return pair
        if size >= 134 and raw[0] == 0x0A and raw[1] < 0x80:  # a text of 126 bytes or more, maybe
            text_pair = self._long_text(raw, size)
            if text_pair is not None:
                if text_pair[0] not in self.unkept:
                    self._keep(raw, text_pair)
                return text_pair
        pair, kind = self._parse(raw)
        if _shareable(pair, kind):
            self._keep(raw, pair)
        return pair

    __missing__ = read  # a span's attribute not kept

    @staticmethod
    def _long_text(raw: bytes, size: int) -> tuple[str, str] | None:
        """A string attribute read straight from its bytes when it has the one canonical layout
        with longer lengths: 0x0A len(key) key 0x12 varint(rest) 0x0A varint(len(text)) text, each
        length saying exactly where the bytes end (so no field is repeated or left over); else
        ``None``, and upb reads it. Content (messages, tool arguments and results) comes this way.
        The caller has made sure no cap applies (the text has no more characters than bytes)."""
        at = raw[1] + 2  # where the value field starts
        if raw[at] != 0x12:
            return None
        try:
            low, high = raw[at + 1], raw[at + 2]
            if low & 0x80 and not high & 0x80:  # lengths of two bytes (texts of 128 bytes to 16 KB): read here
                rest, at_value = (low & 0x7F) | high << 7, at + 3
            else:
                rest, at_value = _varint(raw, at + 1)
            if rest != size - at_value or raw[at_value] != 0x0A:
                return None
            low, high = raw[at_value + 1], raw[at_value + 2]
            if low & 0x80 and not high & 0x80:
                length, start = (low & 0x7F) | high << 7, at_value + 3
            else:
                length, start = _varint(raw, at_value + 1)
        except (_WireError, IndexError):
            return None
        if length != size - start:
            return None
        try:
            key, text = raw[2 : at].decode(), raw[start:].decode()
        except UnicodeDecodeError:
            raise _NotFast from None  # upb rejects it too: the general path says which span
        if "\x00" in text:
            _no_nul(key, text)
        return key, text

    def _parse(self, raw: bytes) -> tuple[tuple[str, Any], str | None]:
        """``raw`` parsed by upb and read, with the kind of its value."""
        try:
            kv = KeyValue.FromString(raw)
        except (_ProtobufError, RecursionError):
            raise _NotFast from None  # invalid UTF-8 and the like: the general path says which span
        value = kv.value
        kind = value.WhichOneof("value")
        if (kind == "array_value" or kind == "kvlist_value") and len(raw) > 2 * _MAX_LEVELS and _too_deep(raw):
            raise _NotFast  # near upb's depth limit, which fails the whole body on the general path
        return (kv.key, _proto_value(value, 1, self.caps, kv.key)), kind

    def _keep(self, raw: bytes, pair: tuple[str, Any]) -> None:
        key = pair[0]
        if key in self.unkept:
            return
        seen, mark = self.seen, hash(raw)  # the hash the memory's look-up computed (bytes keep theirs)
        if mark not in seen:  # the first time: kept the next
            if len(seen) >= _MAX_REMEMBERED:
                seen.clear()
            seen.add(mark)
            return
        misses = self.misses
        if len(self) >= _MAX_REMEMBERED or len(misses) >= _MAX_REMEMBERED:
            self.clear()  # start over rather than grow; every key gets another chance
            misses.clear()
            self.unkept.clear()
        count = misses[key] = misses.get(key, 0) + 1
        if count >= _MAX_MISSES:
            self.unkept.add(key)
        self[raw] = pair


def _shareable(pair: tuple[str, Any], kind: str | None) -> bool:
    """Whether one read value may be handed to every span that holds the same bytes: not a
    kvlist (a dict), nor an array holding one."""
    if kind == "array_value":
        return all(type(item) in _IMMUTABLE for item in pair[1])
    return kind != "kvlist_value"


def _remembered_for(o: DecodeOptions) -> _Remembered:
    """The attributes read under ``o`` 's caps."""
    caps = (o.max_string_chars, o.max_array_items, o.max_value_depth)
    known = _REMEMBERED.get(caps)
    if known is None:
        if len(_REMEMBERED) >= 8:
            _REMEMBERED.clear()
        known = _REMEMBERED[caps] = _Remembered(
            DecodeOptions(max_string_chars=caps[0], max_array_items=caps[1], max_value_depth=caps[2]))
    return known


# text size -> the bytes between a KeyValue's key and its string: value field, AnyValue string field
_STRING_HEADERS = tuple(bytes((0x12, size + 2, 0x0A, size)) for size in range(126))
_IMMUTABLE = frozenset({str, int, float, bool, bytes, type(None)})
# (string, array and depth caps) -> what was read under them; at most 8 combinations
_REMEMBERED: dict[tuple[int, int, int], _Remembered] = {}
_MAX_REMEMBERED = 4096  # ~1.5 MB at most; after a clear the repeating ones return within a few spans
_MAX_MISSES = 256
_REMEMBERED_BYTES = 256
# the longer attributes read in the request being decoded (set by _decode_serialized_attributes)
_REQUEST_TEXTS: ContextVar[dict[bytes, tuple[str, Any]] | None] = ContextVar("mast_otel_request_texts", default=None)
# Nesting (in messages) past which a value is left to the general path: upb fails a whole
# request at 100 levels, 5 of which are the request's own. Each level takes at least 2 bytes.
_MAX_LEVELS = 60
_KEY_VALUE, _ANY_VALUE, _ARRAY_VALUE, _KEY_VALUE_LIST = range(4)
_CHILDREN = {  # message -> its message fields (field number -> message)
    _KEY_VALUE: {2: _ANY_VALUE},
    _ANY_VALUE: {5: _ARRAY_VALUE, 6: _KEY_VALUE_LIST},
    _ARRAY_VALUE: {1: _ANY_VALUE},
    _KEY_VALUE_LIST: {1: _KEY_VALUE},
}


def _too_deep(raw: bytes) -> bool:
    try:
        return _levels(raw, _KEY_VALUE) > _MAX_LEVELS
    except _WireError:  # groups, which upb skips: not worth reading here
        return True


def _levels(buf: bytes, message: int) -> int:
    """How many messages deep a serialized attribute nests (it parsed, so it is well formed)."""
    children = _CHILDREN[message]
    deepest = 0
    for number, payload in _fields(buf):
        child = children.get(number)
        if child is not None:
            deepest = max(deepest, _levels(payload, child))
    return deepest + 1


# attribute key -> the kind of its last value (see _proto_attributes); bounded, since keys are the sender's
_PREDICTED_KIND: dict[str, str] = {}
_MAX_PREDICTED = 4096
_PREDICTABLE_KINDS = frozenset({"string_value", "int_value", "bool_value", "double_value", "array_value"})


def _proto_value(value: Any, depth: int, o: DecodeOptions, key: str = "") -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return _no_nul(key, value.string_value[: o.max_string_chars])
    if kind in _CAPPED_KINDS:
        return getattr(value, kind)[: o.max_string_chars]
    if kind in _SCALAR_KINDS:
        return getattr(value, kind)
    if kind is None:
        return None
    if kind == "array_value":
        return _proto_array(value.array_value.values, depth, o, key)
    if depth > o.max_value_depth:
        raise _Reject(ATTRIBUTE_TOO_DEEP, f"attribute value nested deeper than {o.max_value_depth} levels")
    return {kv.key: _proto_value(kv.value, depth + 1, o, key) for kv in value.kvlist_value.values[: o.max_array_items]}


def _proto_array(values: Any, depth: int, o: DecodeOptions, key: str = "") -> list[Any]:
    """An ``ArrayValue``'s items; strings (the usual kind) read without asking their kind."""
    if depth > o.max_value_depth:
        raise _Reject(ATTRIBUTE_TOO_DEEP, f"attribute value nested deeper than {o.max_value_depth} levels")
    if len(values) > o.max_array_items:
        values = values[: o.max_array_items]
    limit = o.max_string_chars
    items = []
    for item in values:
        text = item.string_value
        if text:
            text = text if len(text) <= limit else text[:limit]
            if "\x00" in text:
                _no_nul(key, text)
            items.append(text)
        else:
            items.append(_proto_value(item, depth + 1, o, key))
    return items


def _proto_events(sp: ProtoSpan, o: DecodeOptions) -> list[Event]:
    events = sp.events
    if not events:
        return []
    return [(event.name, _proto_attributes(event, o)) for event in events[: o.max_events]]


# --- the plain path (``DecodeOptions(fast=False)``): what the shortcuts above must agree with ---

def _plain_attributes(sp: Any, o: DecodeOptions) -> dict[str, Any]:
    """A span's (or event's) attributes, each value's kind asked of upb."""
    kvs = sp.attributes
    if len(kvs) > o.max_attributes:
        raise _Reject(TOO_MANY_ATTRIBUTES, f"{len(kvs)} attributes, more than the limit of {o.max_attributes}")
    return {kv.key: _plain_value(kv.value, 1, o, kv.key) for kv in kvs}


def _plain_value(value: Any, depth: int, o: DecodeOptions, key: str) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "string_value":
        return _no_nul(key, value.string_value[: o.max_string_chars])
    if kind == "bytes_value":
        return value.bytes_value[: o.max_string_chars]
    if kind in _SCALAR_KINDS:
        return getattr(value, kind)
    if depth > o.max_value_depth:
        raise _Reject(ATTRIBUTE_TOO_DEEP, f"attribute value nested deeper than {o.max_value_depth} levels")
    if kind == "array_value":
        return [_plain_value(item, depth + 1, o, key) for item in value.array_value.values[: o.max_array_items]]
    return {kv.key: _plain_value(kv.value, depth + 1, o, key) for kv in value.kvlist_value.values[: o.max_array_items]}


def _plain_events(sp: ProtoSpan, o: DecodeOptions) -> list[Event]:
    return [(event.name, _plain_attributes(event, o)) for event in sp.events[: o.max_events]]


def _salvage(body: bytes, options: DecodeOptions | None, cause: Exception) -> DecodeResult:
    """Walk the wire format down to single spans and parse each on its own."""
    reason = f"body is not a valid OTLP ExportTraceServiceRequest (protobuf): {cause}"
    builder = _Builder(options)
    shaped = False  # the body holds ResourceSpans, even with no span in them (then nothing is lost)
    try:
        for number, resource_spans in _fields(body):
            if number != 1:
                continue
            shaped = True
            parts = _group(resource_spans, {1: "resource", 2: "scope_spans", 3: "schema_url"})
            scopes = []
            sizes: list[int] = []  # each parsed span's, as received
            for scope_spans in parts["scope_spans"]:
                inner = _group(scope_spans, {1: "scope", 2: "spans", 3: "schema_url"})
                spans = []
                for i, raw in enumerate(inner["spans"]):
                    try:
                        spans.append(ProtoSpan.FromString(raw))
                        sizes.append(len(raw))
                    except (_ProtobufError, RecursionError):
                        builder.reject(MALFORMED_SPAN, f"span #{i} of a scope does not parse (invalid UTF-8 or malformed protobuf)")
                scope = _parse_one(InstrumentationScope, inner["scope"])
                scopes.append((scope, _utf8(inner["schema_url"]), spans))
            resource = _parse_one(Resource, parts["resource"])
            if resource is None or any(scope is None for scope, _, _ in scopes):
                count = sum(len(spans) for _, _, spans in scopes)
                if count:
                    builder.reject(MALFORMED_SPAN, f"{count} span(s) dropped: their resource or scope does not parse", count)
                continue
            _decode_resource(builder, resource, _utf8(parts["schema_url"]), scopes, iter(sizes))
    except _WireError:
        raise DecodeError(reason) from None
    if not shaped:
        raise DecodeError(reason)
    return builder.result


class _WireError(Exception):
    pass


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while shift < 64:
        if pos >= len(buf):
            raise _WireError
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    raise _WireError


def _field(buf: bytes, pos: int) -> tuple[int, int, int]:
    """The field at ``buf[pos]``: (its tag, where its value starts when length-delimited, else
    -1, the position after it)."""
    tag, pos = _varint(buf, pos)
    wire_type = tag & 7
    if wire_type == 2:
        length, start = _varint(buf, pos)
        return tag, start, start + length
    if wire_type == 0:
        return tag, -1, _varint(buf, pos)[1]
    if wire_type == 1:
        return tag, -1, pos + 8
    if wire_type == 5:
        return tag, -1, pos + 4
    raise _WireError


def _fields(buf: bytes) -> Iterable[tuple[int, bytes]]:
    """Length-delimited fields of one protobuf message as (field number, payload)."""
    pos, end = 0, len(buf)
    while pos < end:
        tag, start, pos = _field(buf, pos)
        if pos > end or tag >> 3 == 0:
            raise _WireError
        if start >= 0:
            yield tag >> 3, buf[start:pos]


def _span_sizes(body: bytes, request: Any) -> list[int] | None:
    """Each span's size as received, in the order the parsed ``request`` holds the spans
    (resource_spans, scope_spans, spans, each in the order sent): a body at hand needs no
    ``ByteSize`` (a re-serialization) per span. ``None`` for a body this walk does not follow
    (a group, a field cut short, spans counted otherwise than the parser did): ``ByteSize`` then.
    For the usual encoding, fields in order, each once, the two are the same number."""
    sizes: list[int] = []
    try:
        for resource_start, resource_end in _submessages(body, 0, len(body), 1):
            for scope_start, scope_end in _submessages(body, resource_start, resource_end, 2):
                _lengths(body, scope_start, scope_end, 2, sizes)
    except (_WireError, IndexError):
        return None
    parsed = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    return sizes if len(sizes) == parsed else None


def _submessages(buf: bytes, pos: int, end: int, number: int) -> list[tuple[int, int]]:
    """Where each length-delimited field ``number`` of the message at ``buf[pos:end]`` lies."""
    wanted = number << 3 | 2
    out = []
    while pos < end:
        tag, start, pos = _field(buf, pos)
        if tag == wanted:
            out.append((start, pos))
        if pos > end:
            raise _WireError
    return out


def _lengths(buf: bytes, pos: int, end: int, number: int, out: list[int]) -> None:
    """The length of each length-delimited field ``number`` of the message at ``buf[pos:end]``,
    appended to ``out``; tags of one byte and lengths of one or two (spans under 16 KB) read inline."""
    wanted = number << 3 | 2
    while pos < end:
        tag = buf[pos]
        if tag == wanted:
            length = buf[pos + 1]
            if length < 0x80:
                pos += 2
            elif buf[pos + 2] < 0x80:
                length = (length & 0x7F) | buf[pos + 2] << 7
                pos += 3
            else:
                length, pos = _varint(buf, pos + 1)
            out.append(length)
            pos += length
            continue
        tag, start, pos = _field(buf, pos)
        if tag == wanted:
            out.append(pos - start)
    if pos != end:
        raise _WireError


def _group(buf: bytes, names: Mapping[int, str]) -> dict[str, list[bytes]]:
    parts: dict[str, list[bytes]] = {name: [] for name in names.values()}
    for number, payload in _fields(buf):
        if number in names:
            parts[names[number]].append(payload)
    return parts


def _parse_one(message_type: Any, payloads: list[bytes]) -> Any:
    try:
        return message_type.FromString(payloads[-1] if payloads else b"")
    except (_ProtobufError, RecursionError):
        return None


def _utf8(payloads: list[bytes]) -> str:
    return payloads[-1].decode("utf-8", "replace") if payloads else ""


# --- OTLP/JSON -----------------------------------------------------------------------------

_ANY_KINDS = {
    "stringValue": "s", "string_value": "s",
    "intValue": "i", "int_value": "i",
    "doubleValue": "d", "double_value": "d",
    "boolValue": "b", "bool_value": "b",
    "bytesValue": "y", "bytes_value": "y",
    "arrayValue": "a", "array_value": "a",
    "kvlistValue": "k", "kvlist_value": "k",
}  # fmt: skip
_STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_SPECIAL_DOUBLES = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def decode_json(body: bytes | str, options: DecodeOptions | None = None) -> DecodeResult:
    """Decode an OTLP/JSON ``ExportTraceServiceRequest`` (or ``TracesData``).

    Accepts camelCase and snake_case keys, hex ids (base64 too, as protobuf's generic JSON
    mapping writes them), int64 as numbers or strings, enums as names or numbers.
    """
    text, suspect = _json_text(body)
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"body is not valid JSON: {exc}") from None
    return decode_json_object(doc, options, check_utf8=suspect or not (options or _DEFAULT_OPTIONS).fast)


def decode_json_object(doc: Any, options: DecodeOptions | None = None, *, check_utf8: bool = True) -> DecodeResult:
    """Decode an already parsed OTLP/JSON document (used by the file loader)."""
    if not isinstance(doc, dict):
        raise DecodeError("OTLP/JSON body must be an object with a resourceSpans array")
    resource_spans = _get(doc, "resourceSpans", "resource_spans")
    if resource_spans is None:
        if doc:
            raise DecodeError("OTLP/JSON body has no resourceSpans array")
        resource_spans = []
    if not isinstance(resource_spans, list):
        raise DecodeError("resourceSpans must be an array")
    builder = _Builder(options)
    with remembering(builder.options.fast):
        for rs in resource_spans:
            _json_resource(builder, rs, check_utf8)
    return builder.result


def _json_text(body: bytes | str) -> tuple[str, bool]:
    """Body as text, and whether it may hold invalid UTF-8 (checked span by span)."""
    if isinstance(body, str):
        text, suspect = body, not _valid_utf8(body)
    else:
        try:
            text, suspect = body.decode("utf-8"), False  # strict UTF-8 never yields surrogates
        except UnicodeDecodeError:
            return body.decode("utf-8", "surrogateescape"), True
    return text, suspect or "\\ud" in text or "\\uD" in text  # escaped lone surrogates


def _valid_utf8(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError, RecursionError):
        return False
    return True


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _list(obj: Mapping[str, Any], camel: str, snake: str) -> list[Any]:
    value = _get(obj, camel, snake)
    return value if isinstance(value, list) else []


def _json_resource(builder: _Builder, rs: Any, check_utf8: bool) -> None:
    if not isinstance(rs, dict):
        builder.reject(MALFORMED_SPAN, "a resourceSpans entry is not an object; its spans were skipped")
        return
    resource = found if isinstance(found := rs.get("resource"), dict) else {}
    resource_attrs = _list(resource, "attributes", "attributes")
    service = None
    for kv in resource_attrs:
        if isinstance(kv, dict) and kv.get("key") == "service.name":
            value = _get(kv.get("value") or {}, "stringValue", "string_value")
            service = _intern(value[:256].replace("\x00", "\ufffd")) if isinstance(value, str) and value else None
    resource_ok = not check_utf8 or _valid_utf8(resource)
    keep_raw = builder.options.keep_raw
    for ss in _list(rs, "scopeSpans", "scope_spans") + _list(rs, "instrumentationLibrarySpans", "instrumentation_library_spans"):
        if not isinstance(ss, dict):
            builder.reject(MALFORMED_SPAN, "a scopeSpans entry is not an object; its spans were skipped")
            continue
        origin: Origin | _Reject | None = None
        if keep_raw:
            origin = _json_origin(resource, ss, rs)
        for sp in _list(ss, "spans", "spans"):
            if builder.full():
                continue
            if not isinstance(sp, dict):
                builder.reject(MALFORMED_SPAN, "a span is not a JSON object")
                continue
            if not resource_ok or (check_utf8 and not _valid_utf8(sp)):
                builder.reject(INVALID_UTF8, _describe(sp.get("name"), None, "holds invalid UTF-8 (or a lone surrogate)"))
                continue
            _json_span(builder, sp, service, origin)


def _json_span(builder: _Builder, sp: dict[str, Any], service: str | None, origin: Origin | _Reject | None) -> None:
    status = found if isinstance(found := sp.get("status"), dict) else {}
    code = status.get("code", 0)
    code = _STATUS_CODES.get(code, 0) if isinstance(code, str) else code
    message = status.get("message")
    span_id = _json_id(_get(sp, "spanId", "span_id"))
    raw = None
    if origin is not None:
        try:
            if isinstance(origin, _Reject):
                raise origin
            raw = _json_raw(sp)
        except _Reject as exc:
            builder.reject(exc.reason, _describe(sp.get("name"), span_id, exc.detail))
            return
    span = builder.add(
        _json_id(_get(sp, "traceId", "trace_id")),
        span_id,
        _json_id(_get(sp, "parentSpanId", "parent_span_id"), empty_ok=True),
        sp.get("name"),
        _json_int(_get(sp, "startTimeUnixNano", "start_time_unix_nano")),
        _json_int(_get(sp, "endTimeUnixNano", "end_time_unix_nano")),
        code == _STATUS_ERROR,
        message if isinstance(message, str) else "",
        service,
        sp,
        _JSON_READER,
    )
    if span is not None and raw is not None:
        builder.result.wire.append(WireSpan(raw, origin))  # type: ignore[arg-type]


def _json_id(value: Any, empty_ok: bool = False) -> bytes | None:
    """Hex (OTLP/JSON) or base64 (generic protobuf JSON) id -> bytes; None when unreadable."""
    if value is None or value == "":
        return b"" if empty_ok else None
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        return bytes.fromhex(value)
    except ValueError:
        pass
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def _json_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit() and len(value) <= 20:
        return int(value)
    return None


def _json_attributes(sp: Mapping[str, Any], o: DecodeOptions) -> dict[str, Any]:
    kvs = sp.get("attributes")
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


def _json_value(value: Any, depth: int, o: DecodeOptions, key: str = "") -> Any:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _Reject(MALFORMED_SPAN, "an attribute value is not an AnyValue object")
    for key, item in value.items():
        kind = _ANY_KINDS.get(key)
        if kind is None:
            continue
        if kind == "s" and isinstance(item, str):
            text = item if len(item) <= o.max_string_chars else item[: o.max_string_chars]
            if "\x00" in text:
                _no_nul(key, text)
            return text
        if kind == "i":
            number = item if isinstance(item, int) and not isinstance(item, bool) else _signed_int(item)
            if number is not None and -(2**63) <= number < 2**63:
                return number
        elif kind == "d":
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                return float(item)
            if item in _SPECIAL_DOUBLES:
                return _SPECIAL_DOUBLES[item]
        elif kind == "b" and isinstance(item, bool):
            return item
        elif kind == "y" and isinstance(item, str):
            try:
                return base64.b64decode(item, validate=True)[: o.max_string_chars]
            except (binascii.Error, ValueError):
                pass
        elif kind in ("a", "k") and isinstance(item, dict):
            if depth > o.max_value_depth:
                raise _Reject(ATTRIBUTE_TOO_DEEP, f"attribute value nested deeper than {o.max_value_depth} levels")
            values = item.get("values") or []
            if not isinstance(values, list):
                raise _Reject(MALFORMED_SPAN, f"attribute value {key} has no values array")
            values = values[: o.max_array_items]
            if kind == "a":
                return [_json_value(v, depth + 1, o, key) for v in values]
            return {
                kv["key"]: _json_value(kv.get("value"), depth + 1, o, key)
                for kv in values
                if isinstance(kv, dict) and isinstance(kv.get("key"), str)
            }
        raise _Reject(MALFORMED_SPAN, f"attribute value {key} has the wrong type")
    return None


def _signed_int(value: Any) -> int | None:
    if isinstance(value, str) and 0 < len(value) <= 21:
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _json_events(sp: Mapping[str, Any], o: DecodeOptions) -> list[Event]:
    events = _list(sp, "events", "events")
    return [(event["name"], _json_attributes(event, o)) for event in events[: o.max_events]
            if isinstance(event, dict) and isinstance(event.get("name"), str)]


def _json_raw(sp: dict[str, Any]) -> bytes:
    """The span as serialized protobuf, for re-export (``keep_raw``)."""
    from google.protobuf import json_format

    fixed = _with_base64_ids(sp)
    fixed["links"] = [_with_base64_ids(link) for link in _list(sp, "links", "links") if isinstance(link, dict)]
    try:
        return json_format.ParseDict(fixed, ProtoSpan(), ignore_unknown_fields=True).SerializeToString()
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise _Reject(MALFORMED_SPAN, f"cannot be re-encoded as protobuf: {exc}") from None


def _with_base64_ids(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Generic protobuf JSON wants bytes as base64; OTLP/JSON writes ids as hex."""
    fixed = {k: v for k, v in obj.items() if k != "links"}
    for camel, snake in (("traceId", "trace_id"), ("spanId", "span_id"), ("parentSpanId", "parent_span_id")):
        if camel in obj or snake in obj:
            raw = _json_id(_get(obj, camel, snake), empty_ok=True)
            fixed.pop(snake, None)
            fixed[camel] = base64.b64encode(raw).decode() if raw else ""
    return fixed


def _json_origin(resource: Mapping[str, Any], ss: Mapping[str, Any], rs: Mapping[str, Any]) -> Origin | _Reject:
    from google.protobuf import json_format

    scope = ss.get("scope") if isinstance(ss.get("scope"), dict) else {}
    try:
        return Origin(
            json_format.ParseDict(resource, Resource(), ignore_unknown_fields=True).SerializeToString(),
            json_format.ParseDict(scope, InstrumentationScope(), ignore_unknown_fields=True).SerializeToString(),
            str(_get(rs, "schemaUrl", "schema_url") or ""),
            str(_get(ss, "schemaUrl", "schema_url") or ""),
        )
    except (json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        return _Reject(MALFORMED_SPAN, f"its resource or scope cannot be re-encoded as protobuf: {exc}")


_JSON_READER = _Reader(_json_attributes, _json_events)
