"""Trace files on disk -> runs, for ``mast-otel analyze`` and ``mast-otel eval``.

Reads, in any mix and order:

- OTLP/JSON: one ``ExportTraceServiceRequest`` / ``TracesData`` object per file, or one per
  line as the Collector's file exporter writes them;
- SDK span JSON: ``ReadableSpan.to_json()`` objects, one per line or pretty-printed one
  after another as the SDK's console exporter prints them;
- step-lists (agent transcripts that never were spans), via ``steplist``;
- Who&When failure-attribution logs (``history`` + ``mistake_agent``), via ``who_and_when``;
- binary OTLP protobuf (``.pb``/``.binpb``/``.protobuf``): one serialized request;
- OTLP/JSON logs (``ExportLogsServiceRequest``, ``{"resourceLogs": ...}``), beside the traces:
  each GenAI log record (an event whose name starts with ``gen_ai.``) lends its content to the
  span named by its trace and span id, as the same event on the span would; other records are
  ignored, and records whose span is not among the files' agent spans are counted;
- any of these gzip-compressed (``.gz``, or gzip's magic bytes whatever the name): read as
  the file inside (``trace.json.gz`` as ``trace.json``, ``trace.pb.gz`` as ``trace.pb``).

Spans of one trace may be spread over several files, and their log records over others; runs
are yielded once every file has been read. A value that is none of the above raises :class:`LoadError` naming file and line;
a span the decoder rejects is skipped with a warning naming file and line (``strict=True``
raises instead).
"""

from __future__ import annotations

import calendar
import gzip
import json
import zlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from mast_otel.processors.ingest.decode import DecodeError, DecodeOptions, DecodeResult, decode_json_object, decode_protobuf
from mast_otel.processors.ingest.log_records import LogBatch, LogEvent, decode_logs_document, is_logs_document
from mast_otel.processors.ingest.normalize.events import Event, add_event_content
from mast_otel.processors.model import Run, Span
from mast_otel.processors.usage import UsageError

log = logging.getLogger("mast_otel.ingest")

PROTOBUF_SUFFIXES = (".pb", ".binpb", ".protobuf")
GZIP_MAGIC = b"\x1f\x8b"
GZIP_SUFFIX = ".gz"


class LoadError(UsageError, ValueError):
    """A file, or a value in it, that cannot be read; the message names file and line (the CLI prints it, exit 2)."""


@dataclass(slots=True)
class LoadReport:
    """What a load read and what it did not turn into a run, so a command can say so."""

    records: int = 0  # step-list records read
    traces: int = 0  # distinct traces with agent spans
    spans: int = 0  # agent spans read (a span seen twice counts once)
    runs: int = 0
    duplicates: list[str] = field(default_factory=list)  # "where: same record as where"
    duplicate_spans: int = 0  # spans seen twice (overlapping dumps), counted once
    skipped: list[str] = field(default_factory=list)  # "where: why" for runs read but not used
    log_records: int = 0  # GenAI log records read (from OTLP/JSON logs files)
    log_records_joined: int = 0  # of those, joined to their span
    log_records_without_span: int = 0  # of those, naming no agent span the files hold
    log_records_ignored: int = 0  # log records that are not GenAI events
    spans_given_content: int = 0  # spans whose content came from log records

    def as_dict(self) -> dict[str, Any]:
        return {"records": self.records, "traces": self.traces, "spans": self.spans, "runs": self.runs,
                "duplicates": list(self.duplicates),
                "duplicate_spans": self.duplicate_spans, "skipped": list(self.skipped),
                "log_records": self.log_records, "log_records_joined": self.log_records_joined,
                "log_records_without_span": self.log_records_without_span,
                "log_records_ignored": self.log_records_ignored, "spans_given_content": self.spans_given_content}

    def read(self) -> str:
        """What was read, in the units the files hold: step-list records, spans of traces, or both."""
        def many(n: int, what: str) -> str:
            return f"{n} {what}" + ("" if n == 1 else "s")

        if not self.records and not self.traces:
            return "no step-list record and no agent span"
        parts = [many(self.records, "step-list record")] if self.records else []
        if self.traces:
            parts.append(f"{many(self.spans, 'span')} of {many(self.traces, 'trace')}")
        return " and ".join(parts)

    def summary(self) -> str:
        """One line: what was read, runs, duplicates and skips."""
        parts = [f"{self.read()} read", f"{self.runs} runs"]
        if self.duplicates:
            parts.append(f"{len(self.duplicates)} true duplicates kept once")
        if self.duplicate_spans:
            parts.append(f"{self.duplicate_spans} repeated spans counted once")
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        if self.log_records:
            parts.append(f"{self.log_records_joined} of {self.log_records} GenAI log records joined to their spans"
                         + (f" ({self.log_records_without_span} naming no agent span read)" if self.log_records_without_span else ""))
        if self.log_records_ignored:
            parts.append(f"{self.log_records_ignored} other log records ignored")
        return ", ".join(parts)


def load_runs(
    paths: Iterable[str | Path], *, strict: bool = False, options: DecodeOptions | None = None,
    report: LoadReport | None = None,
) -> Iterator[Run]:
    """Every run in ``paths``: agent-related spans grouped by trace, plus step-list runs.

    A span seen twice (the same trace and span id, e.g. in overlapping dumps) counts once. A
    step-list record identical to one already read is a true duplicate: it is kept once and
    named in ``report.duplicates`` (a step-list run's id is a digest of its whole record).
    GenAI log records are joined to their spans once every file has been read (see
    :func:`add_event_content`).
    """
    report = report if report is not None else LoadReport()
    runs: dict[str, Run | dict[str, Span]] = {}  # insertion order = order of first appearance
    links: dict[str, dict[str, str | None]] = {}  # per trace: the parent of each span not kept (see Run.from_spans)
    where_read: dict[str, str] = {}
    records: list[LogEvent] = []
    for path in paths:
        for item, where in _read_file(Path(path), strict, options):
            if isinstance(item, LogBatch):
                report.log_records += len(item.events) + item.no_span_id
                report.log_records_without_span += item.no_span_id
                report.log_records_ignored += item.not_genai + sum(item.rejected.values())
                records += item.events
            elif isinstance(item, Run):
                report.records += 1
                if item.trace_id in runs:
                    report.duplicates.append(f"{where}: the same record as {where_read[item.trace_id]}")
                    continue
                runs[item.trace_id] = item
                where_read[item.trace_id] = where
            elif item.is_agent_related:
                spans = runs.setdefault(item.trace_id, {})
                if isinstance(spans, dict):
                    if not spans:
                        report.traces += 1
                    if item.span_id in spans:
                        report.duplicate_spans += 1
                    else:
                        report.spans += 1
                    spans.setdefault(item.span_id, item)
            elif item.parent_span_id is not None:
                links.setdefault(item.trace_id, {})[item.span_id] = item.parent_span_id
    if records:
        _join(records, runs, report, (options or DecodeOptions()).content_chars)
    for trace_id, entry in runs.items():
        report.runs += 1
        yield entry if isinstance(entry, Run) else Run.from_spans(trace_id, entry.values(), links=links.get(trace_id))


def _join(records: list[LogEvent], runs: dict[str, Run | dict[str, Span]], report: LoadReport,
          content_chars: int) -> None:
    """Each record's content to the span it names, in the order the records were read."""
    by_span: dict[tuple[str, str], tuple[Span, list[Event]]] = {}
    for record in records:
        spans = runs.get(record.trace_id)
        span = spans.get(record.span_id) if isinstance(spans, dict) else None
        if span is None:
            report.log_records_without_span += 1
            continue
        report.log_records_joined += 1
        by_span.setdefault((record.trace_id, record.span_id), (span, []))[1].append(record.event)
    for span, events in by_span.values():
        if add_event_content(span, events, content_chars):
            report.spans_given_content += 1


Item = Span | Run | LogBatch  # what a file holds: spans, step-list runs, log records


def _read_file(path: Path, strict: bool, options: DecodeOptions | None) -> Iterator[tuple[Item, str]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LoadError(f"{path}: cannot read: {exc.strerror or exc}") from None
    suffix = path.suffix.lower()
    if data.startswith(GZIP_MAGIC) or suffix == GZIP_SUFFIX:
        data = _gunzipped(data, path)
        if suffix == GZIP_SUFFIX:  # the name of the file inside says what it holds
            suffix = Path(path.stem).suffix.lower()
    if suffix in PROTOBUF_SUFFIXES:
        try:
            result = decode_protobuf(data, options)
        except DecodeError as exc:
            raise LoadError(f"{path}: {exc}") from None
        _report(result, f"{path}", strict)
        yield from ((span, str(path)) for span in result.spans)
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LoadError(f"{path}:{line}: not UTF-8 text (byte {exc.start}); binary OTLP files need a .pb suffix") from None
    for line, value in _json_values(text, path):
        yield from _read_value(value, f"{path}:{line}", strict, options)


def _gunzipped(data: bytes, path: Path) -> bytes:
    """The content of a gzip file (every member, as ``gzip -d`` gives it)."""
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError; a cut-off file is an EOFError
        raise LoadError(f"{path}: not a readable gzip file: {exc}") from None


def _located(items: Iterable[Span | Run], where: str) -> Iterator[tuple[Item, str]]:
    for n, item in enumerate(items):
        yield item, (f"{where} record {n}" if isinstance(item, Run) else where)


def _json_values(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    """Consecutive JSON values (JSON lines, concatenated pretty-printed objects, or one)."""
    decoder = json.JSONDecoder()
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in " \t\r\n\ufeff":
            pos += 1
        if pos >= end:
            return
        line = text.count("\n", 0, pos) + 1
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise LoadError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
        except RecursionError:
            raise LoadError(f"{path}:{line}: JSON nested too deeply") from None
        yield line, value


def _read_value(value: Any, where: str, strict: bool, options: DecodeOptions | None) -> Iterator[tuple[Item, str]]:
    from mast_otel.processors.ingest import transcripts, who_and_when

    if isinstance(value, dict) and ("resourceSpans" in value or "resource_spans" in value):
        yield from _located(_decoded(value, where, strict, options), where)
    elif is_logs_document(value):
        yield decode_logs_document(value, options), where
    elif is_sdk_span(value) or (isinstance(value, list) and value and all(is_sdk_span(item) for item in value)):
        try:
            doc = sdk_spans_to_otlp(value if isinstance(value, list) else [value])
        except RecursionError:
            raise LoadError(f"{where}: span attributes nested too deeply") from None
        yield from _located(_decoded(doc, where, strict, options), where)
    elif who_and_when.is_who_and_when(value):
        try:
            yield from _located([who_and_when.run_from_who_and_when(value)], where)
        except (ValueError, TypeError, KeyError) as exc:
            raise LoadError(f"{where}: not a readable Who&When log: {exc}") from None
    elif transcripts.is_steplist(value):
        try:
            yield from _located(transcripts.runs_from_steplist(value), where)
        except (ValueError, TypeError, KeyError) as exc:
            raise LoadError(f"{where}: not a readable step-list: {exc}") from None
    elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        for item in value:
            yield from _read_value(item, where, strict, options)
    else:
        raise LoadError(
            f"{where}: not OTLP JSON (resourceSpans or resourceLogs), an SDK span (name + context) or a step-list (steps)"
        )


def _decoded(doc: dict[str, Any], where: str, strict: bool, options: DecodeOptions | None) -> list[Span]:
    try:
        result = decode_json_object(doc, options)
    except DecodeError as exc:
        raise LoadError(f"{where}: {exc}") from None
    _report(result, where, strict)
    return result.spans


def _report(result: DecodeResult, where: str, strict: bool) -> None:
    if not result.rejected:
        return
    if strict:
        raise LoadError(f"{where}: {result.error_message}")
    log.warning("%s: %s", where, result.error_message)


# --- SDK span JSON (ReadableSpan.to_json) -> OTLP/JSON ---------------------------------------

_SDK_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}


def is_sdk_span(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("context"), dict) and "name" in value


def sdk_spans_to_otlp(spans: list[dict[str, Any]]) -> dict[str, Any]:
    """SDK span JSON objects as one OTLP/JSON request, grouped by resource.

    Only reshapes (ids without ``0x``, ISO times to nanoseconds, plain attribute values to
    AnyValue); every check happens in the decoder, as for any OTLP body.
    """
    by_resource: dict[str, list[dict[str, Any]]] = {}
    resources: dict[str, Any] = {}
    for span in spans:
        resource = span.get("resource") if isinstance(span.get("resource"), dict) else {}
        key = json.dumps(resource, sort_keys=True, default=str)
        resources[key] = resource
        by_resource.setdefault(key, []).append(_sdk_span(span))
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _kvs(resources[key].get("attributes"))},
                "scopeSpans": [{"spans": spans}],
            }
            for key, spans in by_resource.items()
        ]
    }


def _sdk_span(span: dict[str, Any]) -> dict[str, Any]:
    context = span["context"]
    status = found if isinstance(found := span.get("status"), dict) else {}
    return {
        "traceId": _sdk_id(context.get("trace_id")),
        "spanId": _sdk_id(context.get("span_id")),
        "parentSpanId": _sdk_id(span.get("parent_id")),
        "name": span.get("name"),
        "startTimeUnixNano": _iso_ns(span.get("start_time")),
        "endTimeUnixNano": _iso_ns(span.get("end_time")),
        "attributes": _kvs(span.get("attributes")),
        "status": {
            "code": _SDK_STATUS.get(str(status.get("status_code", "UNSET")).rsplit(".", 1)[-1], 0),
            "message": status.get("description") or "",
        },
        "events": [
            {"name": event.get("name"), "attributes": _kvs(event.get("attributes"))}
            for event in span.get("events") or ()
            if isinstance(event, dict)
        ],
    }


def _sdk_id(value: Any) -> Any:
    if isinstance(value, str) and value[:2].lower() == "0x":
        return value[2:]
    return value if value is not None else ""


def _iso_ns(value: Any) -> Any:
    """``2024-05-01T12:00:00.123456Z`` (the SDK's format) -> Unix nanoseconds."""
    if not isinstance(value, str):
        return value
    text = value.rstrip("Z")
    whole, _, fraction = text.partition(".")
    try:
        from datetime import datetime

        parsed = datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None  # the decoder rejects the span as invalid_time
    digits = (fraction + "000000000")[:9] if fraction.isdigit() else "000000000"
    return calendar.timegm(parsed.timetuple()) * 10**9 + int(digits)


def _kvs(attributes: Any) -> list[dict[str, Any]]:
    if not isinstance(attributes, dict):
        return []
    return [{"key": key, "value": _any_value(value)} for key, value in attributes.items()]


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(item) for item in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": _kvs(value)}}
    if value is None:
        return {}
    return {"stringValue": str(value)}
