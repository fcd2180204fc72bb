"""``POST /v1/logs``: GenAI events sent as OTLP log records, on the traces receiver's terms.

The same bearer token, Content-Type and Content-Encoding handling, body limit, bytes-in-flight
reservation, memory admission (429/503 with ``Retry-After``) and write-ahead log as
``/v1/traces``: a request is acknowledged only once its records are durable, so a restart
replays them. Records that are not GenAI events are acknowledged and dropped (counted);
records over the decode bounds, without a span id, or dropped by the join are named in the
OTLP partial-success answer. What becomes of each record is the ingest stage's (``log_join``).
"""

from __future__ import annotations

import asyncio

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.ingest.decode import DecodeError
from mast_otel.processors.ingest.log_records import decode_logs_json, decode_logs_protobuf
from mast_otel.processors.service.auth.throttle import AuthThrottle
from mast_otel.processors.service.auth.tokens import authorized, client_address
from mast_otel.processors.service.memory.admission import Reservation
from mast_otel.processors.service.pipeline.ingest_stage import IngestStage, Refusal
from mast_otel.processors.service.receivers.http_limits import client_went_away
from mast_otel.processors.service.receivers.otlp_http import (
    CLOSE, JSON, PROTOBUF, PROTOBUF_TYPES, BodyTooLarge, OverBytesInFlight, declared_length, encode, read_body_within,
    status_response,
)

PATH = "/v1/logs"


def logs_route(stage: IngestStage, config: ProcessorConfig, throttle: AuthThrottle) -> Route:
    """``POST /v1/logs`` as a plain Starlette route (it checks the bearer token itself)."""
    receiver = config.receiver
    token = receiver.ingest_token
    limit = receiver.max_body_bytes
    options = stage.decode_options
    pool = stage.request_bytes
    refusals = stage.refusal_log
    accepted = {as_json: encode(ExportLogsServiceResponse(), as_json) for as_json in (False, True)}

    def refuse(refusal: Refusal, as_json: bool, client: str | None) -> Response:
        stage.refused(refusal, "http", client)
        status = 503 if refusal.unavailable else 429
        return status_response(status, refusal.message, as_json, {"Retry-After": str(refusal.retry_after_seconds)})

    def too_large(exc: BodyTooLarge, as_json: bool, client: str | None) -> Response:
        stage.metrics.ingest_refused_requests_total.labels("http", "body_too_large").inc()
        refusals.refused("http", "body_too_large", client, "413", f"{exc} (receiver.max_body_bytes)")
        return status_response(413, str(exc), as_json)

    async def export_logs(request: Request) -> Response:
        headers = request.headers
        media_type = headers.get("content-type", PROTOBUF).split(";", 1)[0].strip().lower()
        as_json = media_type == JSON
        client = client_address(request)
        if token is not None:
            header = headers.get("authorization")
            denied = throttle.judge(client, PATH, authorized(header, token), header is not None)
            if denied is not None:
                return status_response(denied.status, denied.message, as_json, denied.headers)
        if not as_json and media_type not in PROTOBUF_TYPES:
            refusals.refused("http", "unsupported_media_type", client, "415",
                             f"Content-Type {media_type[:60]!r} is neither {PROTOBUF} nor {JSON}")
            return status_response(415, f"unsupported Content-Type {media_type!r}; use {PROTOBUF} or {JSON}", False)
        refusal = stage.admission()
        if refusal is not None:
            return refuse(refusal, as_json, client)
        try:
            declared_length(request, limit)
        except BodyTooLarge as exc:
            return too_large(exc, as_json, client)
        reservation = Reservation(pool, request.client.host if request.client else "")
        try:
            try:
                body = await read_body_within(request, limit, reservation, receiver.admission_wait_seconds,
                                              receiver.body_timeout_seconds)
            except BodyTooLarge as exc:
                return too_large(exc, as_json, client)
            except OverBytesInFlight:
                return refuse(stage.admission() or stage.bytes_refusal(), as_json, client)
            except asyncio.TimeoutError:
                stage.metrics.ingest_refused_requests_total.labels("http", "body_timeout").inc()
                refusals.refused("http", "body_timeout", client, "408",
                                 f"request body not received within {receiver.body_timeout_seconds:g} s (receiver.body_timeout_seconds)")
                return status_response(408, f"request body not received within {receiver.body_timeout_seconds:g} s", as_json, CLOSE)
            except ClientDisconnect:
                client_went_away(stage.metrics, PATH)
                return Response(status_code=400)  # never sent: the client is gone
            except ValueError as exc:
                refusals.refused("http", "bad_encoding", client, "400", str(exc))
                return status_response(400, str(exc), as_json)
            try:
                batch = (decode_logs_json if as_json else decode_logs_protobuf)(body, options)
            except DecodeError as exc:
                message = f"undecodable OTLP {'JSON' if as_json else 'protobuf'} logs body: {exc}"
                refusals.refused("http", "undecodable", client, "400", message)
                return status_response(400, message, as_json)
            receipt = stage.ingest_logs(batch, "http", body, as_json=as_json)  # the log has the body now
            del body
        finally:
            reservation.release()
        refusal = await stage.durable_async(receipt)
        if refusal is not None:  # the write-ahead log could not take it: not acknowledged
            return refuse(refusal, as_json, client)
        response = stage.answer_logs(batch, receipt.dropped, "http", client)
        content, media = encode(response, as_json) if response is not None else accepted[as_json]
        return Response(content, media_type=media)

    return Route(PATH, export_logs, methods=["POST"], name="export_logs")
