"""One OTLP/HTTP export route, whatever the signal: the terms ``/v1/traces`` and ``/v1/logs`` share.

The bearer token, Content-Type (protobuf or JSON), the body limit (on ``Content-Length`` and
while decompressing), the bytes-in-flight reservation, memory admission (429/503 with
``Retry-After``), and the write-ahead log before the answer: a request is acknowledged only once
its body is durable. What differs between signals (how a body decodes, what the ingest stage
does with it, the partial-success answer) is a :class:`Signal`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Awaitable, Callable, Generic, TypeVar

from google.protobuf.message import Message
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.ingest.decode import DecodeError, DecodeOptions
from mast_otel.processors.service.auth.throttle import AuthThrottle
from mast_otel.processors.service.auth.tokens import authorized, client_address
from mast_otel.processors.service.memory.admission import Reservation, decode_cost
from mast_otel.processors.service.pipeline.ingest_stage import IngestStage, Receipt, Refusal
from mast_otel.processors.service.receivers.drain import Drain
from mast_otel.processors.service.receivers.http_limits import client_went_away
from mast_otel.processors.service.receivers.otlp_http import (
    CLOSE, JSON, PROTOBUF, PROTOBUF_TYPES, BodyTooLarge, OverBytesInFlight, declared_length, encode, read_body_within,
    status_response,
)

Decoded = TypeVar("Decoded")


@dataclass(frozen=True)
class Signal(Generic[Decoded]):
    """What one signal's export route does with a body once it is read."""

    path: str  # "/v1/traces"
    body_name: str  # how an undecodable body is named in the 400 answer: "body", "logs body"
    decode_json: Callable[[bytes, DecodeOptions], Decoded]
    decode_protobuf: Callable[[bytes, DecodeOptions], Decoded]
    ingest: Callable[..., Receipt]  # (decoded, protocol, body, as_json=): the body goes to the write-ahead log
    answer: Callable[[Decoded, dict[str, int], str, str | None], Message | None]  # partial success, or None
    accepted: Message  # the usual answer: an empty Export*ServiceResponse


def _answer(content: bytes, media_type: str) -> Response:
    return Response(content, media_type=media_type)


def export_route(signal: Signal[Decoded], stage: IngestStage, config: ProcessorConfig, throttle: AuthThrottle) -> Route:
    """``POST signal.path`` as a plain Starlette route: it skips FastAPI's dependency and
    validation layer (and the threadpool its sync dependencies run in) and checks the bearer
    token itself. The app answers its POSTs through :class:`ExportPath` (the same handler, the
    route's ``endpoint``); the route answers every other method (405) and any caller that
    goes through the framework's routing."""
    return Route(signal.path, export_handler(signal, stage, config, throttle), methods=["POST"],
                 name=f"export_{signal.path.rsplit('/', 1)[-1]}")


def export_handler(signal: Signal[Decoded], stage: IngestStage, config: ProcessorConfig,
                   throttle: AuthThrottle) -> Callable[[Request], Awaitable[Response]]:
    """The request handler of ``POST signal.path``."""
    receiver = config.receiver
    token = receiver.ingest_token
    limit = receiver.max_body_bytes
    options = stage.decode_options
    pool = stage.request_bytes
    refusals = stage.refusal_log
    # The usual answer, the same bytes and headers every time: built once (a Response is only read when sent).
    accepted = {as_json: _answer(*encode(signal.accepted, as_json)) for as_json in (False, True)}

    def refuse(refusal: Refusal, as_json: bool, client: str | None) -> Response:
        stage.refused(refusal, "http", client)
        status = 503 if refusal.unavailable else 429
        return status_response(status, refusal.message, as_json, {"Retry-After": str(refusal.retry_after_seconds)})

    def too_large(exc: BodyTooLarge, as_json: bool, client: str | None) -> Response:
        stage.metrics.ingest_refused_requests_total.labels("http", "body_too_large").inc()
        refusals.refused("http", "body_too_large", client, "413", f"{exc} (receiver.max_body_bytes)")
        return status_response(413, str(exc), as_json)

    async def export(request: Request) -> Response:
        headers = request.headers
        media_type = headers.get("content-type", PROTOBUF).split(";", 1)[0].strip().lower()
        as_json = media_type == JSON
        client = client_address(request)
        if token is not None:
            header = headers.get("authorization")
            denied = throttle.judge(client, signal.path, authorized(header, token), header is not None)
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
        # Bytes are reserved as they arrive (a declared size costs nothing until its bytes come), per client address.
        reservation = Reservation(pool, client or "")
        try:
            try:
                body = await read_body_within(request, limit, reservation, receiver.admission_wait_seconds,
                                              receiver.body_timeout_seconds)
            except BodyTooLarge as exc:
                return too_large(exc, as_json, client)
            except OverBytesInFlight:
                return refuse(stage.admission() or stage.bytes_refusal(), as_json, client)
            except asyncio.TimeoutError:  # TimeoutError itself from Python 3.11 on
                stage.metrics.ingest_refused_requests_total.labels("http", "body_timeout").inc()
                refusals.refused("http", "body_timeout", client, "408",
                                 f"request body not received within {receiver.body_timeout_seconds:g} s (receiver.body_timeout_seconds)")
                return status_response(408, f"request body not received within {receiver.body_timeout_seconds:g} s", as_json, CLOSE)
            except ClientDisconnect:
                client_went_away(stage.metrics, signal.path)
                return Response(status_code=400)  # never sent: the client is gone
            except ValueError as exc:
                refusals.refused("http", "bad_encoding", client, "400", str(exc))
                return status_response(400, str(exc), as_json)
            # decoding costs several times the body for a moment: reserved in the memory account first
            if not await reservation.decode_async(decode_cost(len(body), as_json=as_json, keep_raw=options.keep_raw),
                                                  receiver.admission_wait_seconds):
                del body
                return refuse(stage.admission() or stage.decode_refusal(), as_json, client)
            try:
                decoded = (signal.decode_json if as_json else signal.decode_protobuf)(body, options)
            except DecodeError as exc:
                message = f"undecodable OTLP {'JSON' if as_json else 'protobuf'} {signal.body_name}: {exc}"
                refusals.refused("http", "undecodable", client, "400", message)
                return status_response(400, message, as_json)
            finally:
                reservation.decoded()
            receipt = signal.ingest(decoded, "http", body, as_json=as_json)  # the log has the body now
            del body
        finally:
            reservation.release()
        refusal = await stage.durable_async(receipt)
        if refusal is not None:  # the write-ahead log could not take it: not acknowledged
            return refuse(refusal, as_json, client)
        response = signal.answer(decoded, receipt.dropped, "http", client)
        if response is None:
            return accepted[as_json]
        content, media = encode(response, as_json)
        return Response(content, media_type=media)

    return export


class ExportPath:
    """``POST`` to an export path, answered ahead of the framework's middleware and routing.

    An export request is the one request a busy processor answers many times a second, and its
    route needs none of what the framework's layers do for the API (dependencies, the API body
    limit, the exception handlers of the store): about a dozen nested ASGI calls and the route
    table's matching per request. What of them applies to it is done here: the drain's count
    and refusal (as ``DrainGate``: once the drain has begun the handler still runs, and refuses
    with ``shutting_down`` in the request's own encoding, uncounted), and an exception answered
    with 500 before it goes on to the server's log (as the framework's outermost layer does)."""

    def __init__(self, handler: Callable[[Request], Awaitable[Response]], drain: Drain | None) -> None:
        self.handler = handler
        self.drain = drain

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        drain = self.drain
        counted = drain is not None and drain.enter()
        try:
            try:
                response = await self.handler(Request(scope, receive))
            except Exception:
                await PlainTextResponse("Internal Server Error", status_code=500)(scope, receive, send)
                raise
            await response(scope, receive, send)
        finally:
            if counted:
                drain.leave()  # type: ignore[union-attr]
