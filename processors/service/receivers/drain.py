"""The HTTP side of a graceful shutdown: keep listening, answer 503, let what was let in finish.

A closed listener tells a client nothing (connection refused, which exporters and load
balancers treat as a dead host), so on SIGTERM the HTTP receiver stays open until everything
else has stopped. From the moment the drain begins, new requests get 503 with ``Retry-After``
and ``Connection: close`` (they go to another replica, or come back after the restart); OTLP
export requests are refused by the ingest stage itself (reason ``shutting_down``, encoded as
OTLP asks); probes and ``/metrics`` keep answering. The host waits for the requests already let
in before the pipeline flushes, so nothing they carried is left behind.
"""

from __future__ import annotations

import json
import threading
import time

from starlette.types import ASGIApp, Receive, Scope, Send

ALWAYS_OPEN = frozenset({"/healthz", "/readyz", "/metrics"})
SELF_REFUSING = frozenset({"/v1/traces", "/v1/logs"})  # refuses with its own encoding while draining


class Drain:
    """Whether the drain has begun, and the HTTP requests let in and not yet answered."""

    def __init__(self) -> None:
        self._draining = False
        self._active = 0
        self._changed = threading.Condition()

    def begin(self) -> None:
        """From now on new requests are refused (idempotent)."""
        with self._changed:
            self._draining = True

    def enter(self) -> bool:
        """A request arrives: ``True`` (and counted until ``leave``) unless the drain has begun."""
        with self._changed:
            if self._draining:
                return False
            self._active += 1
            return True

    def leave(self) -> None:
        with self._changed:
            self._active -= 1
            self._changed.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the requests let in to be answered; whether they were."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._active > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True


class DrainGate:
    """ASGI middleware: counts requests in progress and refuses new ones once ``drain`` has begun."""

    def __init__(self, app: ASGIApp, drain: Drain, retry_after_seconds: int) -> None:
        self.app = app
        self.drain = drain
        self._headers = [(b"content-type", b"application/json"), (b"retry-after", str(retry_after_seconds).encode()),
                         (b"connection", b"close")]
        self._body = json.dumps({"detail": "the processor is shutting down; retry", "reason": "shutting_down"}).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in ALWAYS_OPEN:
            await self.app(scope, receive, send)
            return
        if self.drain.enter():
            try:
                await self.app(scope, receive, send)
            finally:
                self.drain.leave()
        elif scope["path"] in SELF_REFUSING:  # refused by the route itself, as its protocol asks
            await self.app(scope, receive, send)
        else:
            await send({"type": "http.response.start", "status": 503,
                        "headers": [*self._headers, (b"content-length", str(len(self._body)).encode())]})
            await send({"type": "http.response.body", "body": self._body})
