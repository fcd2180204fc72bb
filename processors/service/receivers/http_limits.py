"""What a slow or oversized HTTP client may cost: a deadline and a size cap for the request head,
a deadline and a size cap for API request bodies, and a bound on connections.

The receiver runs uvicorn's httptools protocol (a C parser: about 40% less CPU per request
than h11's pure-Python one, which matters most for the small batches an exporter sends when
traffic is light). uvicorn closes idle keep-alive connections but sets no deadline and no
size cap on a request head, so a client that opens a connection and trickles header bytes
(slow-loris), or sends headers without end, would hold it for ever. ``HeadTimeoutProtocol``
closes such a connection ``header_timeout_seconds`` after it opened (or after the first byte
of its next request) and answers 431 to a head over ``MAX_HEAD_BYTES``. The OTLP route reads
its own body under ``body_timeout_seconds`` and the bytes-in-flight budget (``api/app.py``);
``APIBodyLimit`` does the same for every other route, whose bodies are small JSON documents.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any, Awaitable, Callable

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mast_otel.processors.config import ReceiverConfig
from mast_otel.processors.service.telemetry.metrics import Metrics

log = logging.getLogger(__name__)

OTLP_PATHS = frozenset({"/v1/traces", "/v1/logs"})  # they read their own bodies
MAX_HEAD_BYTES = 64 * 1024  # request line plus headers
_HEAD_TOO_LARGE_TEXT = f"request head over {MAX_HEAD_BYTES} bytes\n".encode()
_HEAD_TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain; charset=utf-8\r\n"
                   b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_HEAD_TOO_LARGE_TEXT), _HEAD_TOO_LARGE_TEXT))

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


# Bytes read from a socket at most per read, as asyncio reads them (its transports' max_size).
READ_BUFFER_BYTES = 256 * 1024
_read_buffers = threading.local()  # one per event-loop thread: a read is filled and parsed in one callback


def _read_buffer() -> memoryview:
    view = getattr(_read_buffers, "view", None)
    if view is None:
        view = _read_buffers.view = memoryview(bytearray(READ_BUFFER_BYTES))
    return view


class HeadTooLarge(Exception):
    """Raised from a parser callback: the parser stops, uvicorn answers through ``send_400_response``."""


class HeadTimeoutProtocol(HttpToolsProtocol, asyncio.BufferedProtocol):
    """uvicorn's httptools protocol with a deadline and a size cap on each request head, and a
    deadline on the rest of a body that uvicorn discards after the app answered early (a refusal).

    It reads sockets into one buffer per event-loop thread (``asyncio.BufferedProtocol``), which
    the parser reads in place: a plain protocol gets a new bytes object of up to 256 KiB per
    read, memory the allocator maps fresh from the system for every large read (the server gives
    blocks that large back when freed), so each read of a request body paid a page fault per
    4 KiB besides the copy. The parser copies out what it keeps (the URL, headers, body chunks)."""

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
        self._deadline: asyncio.TimerHandle | None = None
        self._head_done = False  # the current request's head is complete (the parser said so)
        self._message_done = False  # ... and its body
        self._head_bytes = 0  # bytes received since the current request head began
        self._head_parsed = 0  # bytes of the current request head the parser has read
        self._head_too_large = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout_seconds)

    # parser callbacks (called by uvicorn's data_received, through the parser)
    def on_message_begin(self) -> None:
        self._head_done = self._message_done = False
        self._head_parsed = 0
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value) + 4)  # ": " and CRLF
        super().on_header(name, value)

    def _count_head(self, nbytes: int) -> None:
        """The head as parsed, for a head that arrived in one piece (``data_received`` counts
        one that trickles in); over the cap the parser stops and ``send_400_response`` answers 431."""
        self._head_parsed += nbytes
        if self._head_parsed > MAX_HEAD_BYTES:
            self._head_too_large = True
            raise HeadTooLarge()

    def send_400_response(self, msg: str) -> None:
        if not self._head_too_large:
            super().send_400_response(msg)
            return
        log.debug("closing an HTTP connection whose request head passed %d bytes", MAX_HEAD_BYTES)
        self.transport.write(_HEAD_TOO_LARGE)
        self.transport.close()

    def on_headers_complete(self) -> None:
        self._head_done = True
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._message_done = True
        super().on_message_complete()

    def _waiting_for_client(self) -> float | None:
        """The deadline that applies now: the client owes a request head, or the rest of a
        body nobody reads any more; ``None`` while the app is reading or answering."""
        answered = self.cycle is None or self.cycle.response_complete
        if not self._head_done:  # a head is owed, or under way
            return self.header_timeout_seconds
        if self._message_done:  # the next head is owed once this request is answered
            return self.header_timeout_seconds if answered else None
        return self.body_timeout_seconds if answered else None

    def get_buffer(self, sizehint: int) -> memoryview:
        return _read_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(_read_buffer()[:nbytes])

    def data_received(self, data: bytes | memoryview) -> None:
        owed_head = not self._head_done or self._message_done
        super().data_received(data)  # type: ignore[arg-type]  # httptools reads any buffer
        if self.parser is None or self.transport.is_closing():
            return
        if owed_head and not self._head_done:  # still in a head: count it against the cap
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                log.debug("closing an HTTP connection whose request head passed %d bytes", MAX_HEAD_BYTES)
                self.transport.write(_HEAD_TOO_LARGE)
                self.transport.close()
                return
        else:
            self._head_bytes = 0
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
            log.debug("closing an HTTP connection whose client stopped sending")
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
        if scope["type"] != "http" or scope["path"] in OTLP_PATHS or scope["method"] in ("GET", "HEAD", "OPTIONS"):
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
