"""What a slow or oversized HTTP client may cost: a deadline for the request head, a deadline and
a size cap for API request bodies, and a bound on connections.

uvicorn closes idle keep-alive connections but sets no deadline on a request head, so a
client that opens a connection and trickles header bytes (slow-loris) would hold it for ever.
``HeadTimeoutProtocol`` closes such a connection ``header_timeout_seconds`` after it opened
(or after the first byte of its next request). The OTLP route reads its own body under
``body_timeout_seconds`` and the bytes-in-flight budget (``app.py``); ``APIBodyLimit`` does
the same for every other route, whose bodies are small JSON documents.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Awaitable, Callable

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from mast_otel.processors.config import ReceiverConfig
from mast_otel.processors.service.metrics import Metrics

log = logging.getLogger(__name__)

OTLP_PATH = "/v1/traces"

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class HeadTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request head, and on the rest of a body
    that uvicorn discards after the app answered early (a refusal)."""

    header_timeout_seconds = 10.0  # set per server by ``protocol_for``
    body_timeout_seconds = 30.0
    retry_after_seconds = 1

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # uvicorn's own concurrency limit answers 503 without Retry-After, which exporters read as
        # "retry at once" (or not at all); the same limit is kept here with the header.
        limit, self.limit_concurrency = self.limit_concurrency, None
        if limit is not None:
            self.app = ConnectionLimit(self.app, limit, self.connections, self.tasks, self.retry_after_seconds)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._deadline: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._arm(self.header_timeout_seconds)

    def _waiting_for_client(self) -> float | None:
        """The deadline that applies now: the client owes a request head, or the rest of a
        body nobody reads any more; ``None`` while the app is reading or answering."""
        theirs, ours = self.conn.their_state, self.conn.our_state
        if theirs is h11.IDLE:
            return self.header_timeout_seconds
        if theirs is h11.SEND_BODY and ours in (h11.DONE, h11.MUST_CLOSE):
            return self.body_timeout_seconds
        return None

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        seconds = self._waiting_for_client()
        if seconds is None:
            self._disarm()
        elif self._deadline is None and self.timeout_keep_alive_task is None:
            self._arm(seconds)

    def on_response_complete(self) -> None:
        self._disarm()  # the keep-alive timeout takes over
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self, seconds: float) -> None:
        self._deadline = self.loop.call_later(seconds, self._timed_out)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self) -> None:
        self._deadline = None
        if self._waiting_for_client() is not None and not self.transport.is_closing():
            log.debug("closing an HTTP connection whose client stopped sending (state %s)", self.conn.their_state)
            self.transport.close()


class ConnectionLimit:
    """ASGI wrapper: past ``max_http_connections`` open connections (or requests in progress), a
    request gets 503 with ``Retry-After`` and its connection is closed."""

    def __init__(self, app: Any, limit: int, connections: set, tasks: set, retry_after_seconds: int) -> None:
        self.app, self.limit, self.connections, self.tasks = app, limit, connections, tasks
        self.headers = [(b"retry-after", str(retry_after_seconds).encode()), (b"connection", b"close")]
        self._warned_at = float("-inf")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # This request's own task is already counted in ``tasks``, hence ``>``.
        if len(self.connections) < self.limit and len(self.tasks) <= self.limit:
            await self.app(scope, receive, send)
            return
        now = asyncio.get_running_loop().time()
        if now - self._warned_at >= 10:
            self._warned_at = now
            log.warning("over max_http_connections (%d): answering 503 with Retry-After", self.limit)
        await _answer(send, 503, f"more than {self.limit} connections or requests in progress; retry later", self.headers)


def protocol_for(config: ReceiverConfig) -> type[HeadTimeoutProtocol]:
    """The protocol class with this receiver's deadlines and retry hint."""
    return type("ReceiverProtocol", (HeadTimeoutProtocol,), {
        "header_timeout_seconds": config.header_timeout_seconds, "body_timeout_seconds": config.body_timeout_seconds,
        "retry_after_seconds": config.retry_after_seconds})


def uvicorn_limits(config: ReceiverConfig) -> dict[str, Any]:
    """The ``uvicorn.Config`` keyword arguments that bound connections."""
    return {
        "http": protocol_for(config),
        "timeout_keep_alive": config.keep_alive_seconds,
        "limit_concurrency": config.max_http_connections,
        "h11_max_incomplete_event_size": 64 * 1024,  # request line plus headers
    }


def client_went_away(metrics: Metrics, path: str) -> None:
    """A client disconnected mid-request: counted, one DEBUG line, no traceback."""
    metrics.client_disconnects_total.labels("http").inc()
    log.debug("client disconnected before its request to %s was read", path)


class APIBodyLimit:
    """ASGI middleware: reads an API request's body (not OTLP's) under a size cap and a deadline,
    then hands it on; answers 413, 408, or nothing when the client went away."""

    def __init__(self, app: Any, config: ReceiverConfig, metrics: Metrics) -> None:
        self.app = app
        self.max_bytes = config.max_api_body_bytes
        self.timeout = config.body_timeout_seconds
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == OTLP_PATH or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await _answer(send, 413, f"request body of {int(declared)} bytes exceeds the {self.max_bytes}-byte limit")
            return
        try:
            body = await asyncio.wait_for(self._read(receive), self.timeout)
        except asyncio.TimeoutError:  # TimeoutError itself from Python 3.11 on
            await _answer(send, 408, f"request body not received within {self.timeout:g} s")
            return
        if body is None:
            client_went_away(self.metrics, scope["path"])
            return
        if len(body) > self.max_bytes:
            await _answer(send, 413, f"request body exceeds the {self.max_bytes}-byte limit")
            return
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive) -> bytes | None:
        """The body, ``None`` on disconnect; stops reading one byte past the cap."""
        parts, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            parts.append(chunk)
            if size > self.max_bytes or not message.get("more_body", False):
                return b"".join(parts)


async def _answer(send: Send, status: int, detail: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status,
                "headers": headers + (extra or [(b"connection", b"close")])})
    await send({"type": "http.response.body", "body": body})
