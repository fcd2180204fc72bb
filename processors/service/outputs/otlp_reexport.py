"""Re-export of the original spans, enriched with the diagnosis, over OTLP (HTTP or gRPC).

The receiver keeps each span's serialized protobuf and its resource and scope (a ``WireSpan``,
beside the decoded ``Span``) only when this exporter is on. Spans that carry nothing new are copied into
the outgoing request byte for byte; only the run's root span (diagnosis attributes) and the
spans that anchor a failure mode (``gen_ai.evaluation.result`` events) are parsed and changed.

A bounded queue decouples ingest from the backend: ``submit`` never blocks; a full queue (in
requests or in bytes, ``queue_bytes``) or a batch that still fails after retries is dropped and
counted (``mast_export_dropped_spans_total{reason}``). What is queued or being sent is charged
to the memory account, so a dead or silent backend costs at most ``queue_bytes`` and admission
sees it.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence
from urllib.parse import urlsplit

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from mast_otel.wire import attributes as A
from mast_otel.processors.config import AssemblyConfig, ExporterConfig
from mast_otel.processors.ingest.decode import Origin, WireSpan
from mast_otel.processors.model import Diagnosis, Span
from mast_otel.processors.service.memory.account import Charge, MemoryAccount
from mast_otel.processors.service.telemetry.metrics import Metrics

log = logging.getLogger(__name__)

_RETRYABLE_HTTP = {429, 502, 503, 504}
DEFAULT_BUDGET = AssemblyConfig.model_fields["max_buffered_bytes"].default  # without an account: the default one's


@dataclass(frozen=True)
class SendFailure:
    """Why one attempt failed (the backend's status and message, or the connection error), and
    whether another attempt may succeed; the warning for dropped spans quotes the last one."""

    retryable: bool
    reason: str


def _short(text: str, limit: int = 200) -> str:
    """A backend's message on one line and bounded (some answer with a whole HTML page)."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def endpoint_label(url: str) -> str:
    """An endpoint as a metric label: scheme, host, port and path; never credentials or a query."""
    parts = urlsplit(url)
    if not parts.hostname:
        return url.split("?", 1)[0].rsplit("@", 1)[-1]
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else f"{host}{port}{parts.path}"


# --- building requests (pure) ----------------------------------------------------------------
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _origin_parts(origin) -> tuple[bytes, bytes, str, str]:
    """(resource, scope, resource schema url, scope schema url) of a decoded span's origin."""
    return (
        getattr(origin, "resource", b"") or b"",
        getattr(origin, "scope", b"") or b"",
        getattr(origin, "resource_schema_url", "") or "",
        getattr(origin, "scope_schema_url", "") or "",
    )


def encode_request(spans: Iterable[tuple[Origin, bytes]]) -> bytes:
    """An ``ExportTraceServiceRequest`` holding ``(origin, serialized span)`` pairs under their origins."""
    groups: dict[int, tuple[Origin, list[bytes]]] = {}
    for origin, raw in spans:
        groups.setdefault(id(origin), (origin, []))[1].append(raw)
    body = bytearray()
    for origin, raws in groups.values():
        resource, scope, resource_schema, scope_schema = _origin_parts(origin)
        scope_spans = (_field(1, scope) if scope else b"") + b"".join(_field(2, r) for r in raws)
        if scope_schema:
            scope_spans += _field(3, scope_schema.encode())
        resource_spans = (_field(1, resource) if resource else b"") + _field(2, scope_spans)
        if resource_schema:
            resource_spans += _field(3, resource_schema.encode())
        body += _field(1, resource_spans)
    return bytes(body)


def _value(value) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, (list, tuple)):
        out = AnyValue()
        out.array_value.values.extend(_value(v) for v in value)
        return out
    return AnyValue(string_value=str(value))


def _set_attributes(target, values: dict) -> None:
    """Set attributes on a proto span or event, replacing earlier values of the same keys."""
    kept = [kv for kv in target.attributes if kv.key not in values]
    del target.attributes[:]
    target.attributes.extend(kept)
    target.attributes.extend(KeyValue(key=k, value=_value(v)) for k, v in values.items())


def enrichment(diagnosis: Diagnosis) -> tuple[str | None, dict, dict[str, list[dict]]]:
    """(root span id, root attributes, span id -> evaluation events) for a diagnosis."""
    verdicts = diagnosis.verdicts
    root_attrs = {
        A.MAST_FAILURE_MODES: list(verdicts),
        A.MAST_FAILURE_MODE_COUNT: len(verdicts),
        A.MAST_FATAL: diagnosis.fatal,
        A.MAST_DIAGNOSIS_SOURCES: diagnosis.sources,
    }
    who = diagnosis.attribution
    if who is not None:
        root_attrs.update({k: v for k, v in ((A.MAST_ATTRIBUTION_AGENT, who.agent),
                                             (A.MAST_ATTRIBUTION_STEP_SPAN_ID, who.step_span_id),
                                             (A.MAST_ATTRIBUTION_SOURCE, who.source)) if v is not None})
    events: dict[str, list[dict]] = {}
    for mode, verdict in verdicts.items():
        anchor = next((f.anchor_span_id for f in verdict.findings if f.anchor_span_id), None) or diagnosis.root_span_id
        if anchor is None:
            continue
        events.setdefault(anchor, []).append({
            A.GEN_AI_EVALUATION_NAME: f"mast.{mode}",
            A.GEN_AI_EVALUATION_SCORE_LABEL: "detected",
            A.GEN_AI_EVALUATION_SCORE_VALUE: float(verdict.confidence),
            A.GEN_AI_EVALUATION_EXPLANATION: " ".join(dict.fromkeys(f.explanation for f in verdict.findings if f.explanation)),
            A.MAST_EVIDENCE_SPAN_IDS: list(verdict.evidence_span_ids),
            **({A.MAST_JUDGE_PROMPT_VERSION: version} if (version := next(
                (f.prompt_version for f in verdict.findings if f.prompt_version), None)) else {}),
        })
    return diagnosis.root_span_id, root_attrs, events


def enrich_spans(spans: Sequence[Span], wire: Mapping[str, WireSpan], diagnosis: Diagnosis,
                 only: set[str] | None = None) -> list[tuple[str, Origin, bytes]]:
    """(span id, origin, serialized span) of the run's spans with the diagnosis attached; ``only``
    limits which span ids are included. Spans without a wire form cannot be re-exported and are skipped.
    """
    root_id, root_attrs, events = enrichment(diagnosis)
    if root_id is None and spans:
        root_id = spans[0].span_id
    out = []
    for span in spans:
        kept = wire.get(span.span_id)
        if kept is None or (only is not None and span.span_id not in only):
            continue
        raw = kept.raw
        if span.span_id == root_id or span.span_id in events:
            proto = ProtoSpan.FromString(raw)
            if span.span_id == root_id:
                _set_attributes(proto, root_attrs)
            for attrs in events.get(span.span_id, ()):
                event = proto.events.add(name=A.EVENT_EVALUATION_RESULT, time_unix_nano=proto.end_time_unix_nano)
                _set_attributes(event, attrs)
            raw = proto.SerializeToString()
        out.append((span.span_id, kept.origin, raw))
    return out


def changed_span_ids(diagnosis: Diagnosis) -> set[str]:
    """Spans whose enrichment depends on the diagnosis: the root and every mode's anchor."""
    root_id, _, events = enrichment(diagnosis)
    return set(events) | ({root_id} if root_id else set())


# --- sending (I/O) ---------------------------------------------------------------------------
class OTLPReexporter:
    """Sends enriched spans to ``config.endpoint`` from a background thread."""

    def __init__(self, config: ExporterConfig, metrics: Metrics, memory: MemoryAccount | None = None) -> None:
        if not config.endpoint:
            raise ValueError("exporter.endpoint is not set")
        self.config = config
        self.metrics = metrics
        self._queue: queue.Queue[tuple[bytes, int] | None] = queue.Queue(maxsize=config.queue_size)
        # bytes queued or being sent, charged to the memory account
        self.queued = memory.charge(f"otlp_queue:{id(self):x}") if memory is not None else Charge("otlp_queue")
        self.queue_bytes = config.queue_bytes or (memory.budget if memory is not None else DEFAULT_BUDGET) // 8
        self._queued_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._deadline: float | None = None  # set by stop(): stop retrying after it
        self._send = self._http_sender() if config.protocol == "http/protobuf" else self._grpc_sender()
        self._exported = metrics.exported_spans_total.labels(endpoint_label(config.endpoint))

    def submit(self, pairs: list[tuple[Origin, bytes]]) -> None:
        """Queue spans for export; never blocks (a full queue drops them, counted)."""
        if pairs:
            self.submit_encoded(encode_request(pairs), len(pairs))

    def submit_encoded(self, body: bytes, count: int) -> None:
        """Queue an encoded request of ``count`` spans; never blocks (a full queue drops it, counted)."""
        size = len(body)
        with self._queued_lock:  # one check-and-charge at a time: the byte cap holds
            if self.queued.held + size > self.queue_bytes and self.queued.held:
                self.metrics.export_dropped_spans_total.labels("queue_full").inc(count)
                return
            try:
                self._queue.put_nowait((body, count))
            except queue.Full:
                self.metrics.export_dropped_spans_total.labels("queue_full").inc(count)
                return
            self.queued.add(size)

    def forward(self, spans: Sequence[WireSpan]) -> None:
        """Pass spans through unchanged (spans that are not part of any agent run)."""
        if self.config.export_all_spans:
            self.submit([(w.origin, w.raw) for w in spans])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="mast-otel-exporter", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Send what is queued (within ``timeout``), then stop."""
        if self._thread is None:
            return
        self._deadline = time.monotonic() + timeout
        self._queue.put(None)
        self._thread.join(timeout)
        self._thread = None

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            bodies, count = [item[0]], item[1]
            stopping = False
            while len(bodies) < self.config.merge_requests:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stopping = True
                    break
                bodies.append(more[0])
                count += more[1]
            # Concatenated requests are one request: resource_spans is a repeated field.
            size = sum(map(len, bodies))
            body = b"".join(bodies)
            del bodies
            try:
                self._deliver(body, count)
            finally:
                self.queued.add(-size)
            if stopping:
                return

    def _deliver(self, body: bytes, count: int) -> None:
        cfg = self.config
        failure = SendFailure(False, "no attempt made")
        for attempt in range(cfg.max_attempts):
            try:
                failure = self._send(body)
            except Exception as exc:  # connection errors: retry
                failure = SendFailure(True, _short(f"{type(exc).__name__}: {exc}"))
            if failure is None:
                self._exported.inc(count)
                return
            log.debug("re-export attempt %d failed: %s", attempt + 1, failure.reason)
            if not failure.retryable or (self._deadline and time.monotonic() > self._deadline):
                break
            if attempt + 1 < cfg.max_attempts:
                time.sleep(min(cfg.max_backoff_seconds, cfg.backoff_seconds * 2**attempt) * random.uniform(0.8, 1.2))
        log.warning("dropping %d enriched spans after %d failed re-export attempt(s) to %s: %s",
                    count, attempt + 1, self.config.endpoint, failure.reason)
        self.metrics.export_dropped_spans_total.labels("export_failed").inc(count)

    # Each sender returns None on success, else a SendFailure.
    def _http_sender(self):
        import httpx

        client = httpx.Client(timeout=self.config.timeout_seconds)
        headers = {**self.config.headers, "Content-Type": "application/x-protobuf"}

        def send(body: bytes) -> SendFailure | None:
            response = client.post(self.config.endpoint, content=body, headers=headers)
            if response.status_code < 300:
                return None
            reason = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
            message = _short(response.text) if response.content else ""
            return SendFailure(response.status_code in _RETRYABLE_HTTP, f"{reason}: {message}" if message else reason)

        return send

    def _grpc_sender(self):
        import grpc
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2_grpc import TraceServiceStub

        endpoint = self.config.endpoint
        target = endpoint.split("://", 1)[-1].rstrip("/")
        channel = grpc.secure_channel(target, grpc.ssl_channel_credentials()) if endpoint.startswith("https://") else grpc.insecure_channel(target)
        stub = TraceServiceStub(channel)
        metadata = tuple((k.lower(), v) for k, v in self.config.headers.items())
        retryable = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED}

        def send(body: bytes) -> SendFailure | None:
            try:
                stub.Export(ExportTraceServiceRequest.FromString(body), timeout=self.config.timeout_seconds, metadata=metadata)
            except grpc.RpcError as exc:
                details = _short(exc.details() or "")
                return SendFailure(exc.code() in retryable, f"gRPC {exc.code().name}" + (f": {details}" if details else ""))
            return None

        return send
