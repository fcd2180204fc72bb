"""Bytes of export request bodies in flight, shared by the HTTP and gRPC receivers.

The assembly budget (``assembly.max_buffered_bytes``) bounds what is buffered once spans are
decoded; this bounds what is held before that: bodies being read and decoded. A receiver
reserves a body's size (HTTP: its ``Content-Length`` before reading, then as a chunked or
compressed body grows; gRPC: the largest message before receiving it, then its real size)
and releases it once the spans are ingested. A request that would not fit is refused with a
retry hint, so any number of concurrent senders costs at most the limit. One request always
fits when nothing else is in flight, so a body larger than the limit (but within
``receiver.max_body_bytes``) is still accepted, alone.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Callable

from mast_otel.processors.config import ProcessorConfig


def bytes_in_flight_limit(config: ProcessorConfig) -> int:
    """``receiver.max_bytes_in_flight``, or half the assembly budget when unset."""
    explicit = config.receiver.max_bytes_in_flight
    return explicit if explicit is not None else max(1, config.assembly.max_buffered_bytes // 2)


class BytesInFlight:
    """A counting semaphore on bytes; thread-safe (the HTTP event loop and gRPC workers share it)."""

    def __init__(self, limit: int, on_change: Callable[[int], object] | None = None) -> None:
        self.limit = limit
        self.held = 0
        self._changed = threading.Condition()
        self._on_change = on_change  # called with the bytes held after each change

    def _fits(self, nbytes: int, own: int = 0) -> bool:
        """``own``: what the asking request already holds (alone, it may grow past the limit)."""
        return self.held == own or self.held + nbytes <= self.limit

    def _take(self, nbytes: int) -> None:
        self.held += nbytes
        if self._on_change is not None:
            self._on_change(self.held)

    def try_acquire(self, nbytes: int, own: int = 0) -> bool:
        with self._changed:
            if not self._fits(nbytes, own):
                return False
            self._take(nbytes)
            return True

    def acquire(self, nbytes: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``nbytes`` to fit (gRPC worker threads)."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._fits(nbytes), timeout):
                return False
            self._take(nbytes)
            return True

    async def acquire_async(self, nbytes: int, timeout: float, give_up: Callable[[], object] | None = None) -> bool:
        """``acquire`` for the event loop: polls instead of blocking it; stops waiting early
        once ``give_up()`` returns something true (a refusal that makes waiting pointless)."""
        deadline = time.monotonic() + timeout
        while not self.try_acquire(nbytes):
            if time.monotonic() >= deadline or (give_up is not None and give_up()):
                return False
            await asyncio.sleep(0.005)
        return True

    def release(self, nbytes: int) -> None:
        if nbytes <= 0:
            return
        with self._changed:
            self._take(-nbytes)
            self._changed.notify_all()


class Reservation:
    """One request's share of :class:`BytesInFlight`; grows with the body, released once."""

    def __init__(self, pool: BytesInFlight, nbytes: int = 0) -> None:
        self.pool = pool
        self.nbytes = nbytes

    def grow_to(self, nbytes: int) -> bool:
        """Hold at least ``nbytes``; ``False`` when the extra does not fit."""
        extra = nbytes - self.nbytes
        if extra <= 0:
            return True
        if not self.pool.try_acquire(extra, own=self.nbytes):
            return False
        self.nbytes = nbytes
        return True

    def shrink_to(self, nbytes: int) -> None:
        if nbytes < self.nbytes:
            self.pool.release(self.nbytes - nbytes)
            self.nbytes = nbytes

    def release(self) -> None:
        self.pool.release(self.nbytes)
        self.nbytes = 0
