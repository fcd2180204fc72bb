"""Bytes of export request bodies in flight, shared by the HTTP and gRPC receivers.

The assembly budget (``assembly.max_buffered_bytes``) bounds what is held in all; this bounds
what is held before spans are decoded: bodies being read and decoded. An HTTP body's bytes
are reserved as they arrive (each chunk as it is read, then what decompression adds), never a
size the client merely declares. gRPC hands over a message only once it is whole, while the
gRPC core reads it into memory as it arrives: a call reserves ``max_body_bytes`` (the most it
can hold) for as long as its message may take to arrive (``body_timeout_seconds``), then only
the message's real size. Both release their bytes once the spans are ingested. A request that would not fit is refused with a
retry hint, so any number of concurrent senders costs at most the limit, and one peer (a
client address) at most its share of it. One request always fits when nothing else is in
flight and the memory account has room for it (or holds nothing else), so a body larger than
the limit (but within ``receiver.max_body_bytes``) is still accepted, alone.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from typing import Callable

from mast_otel.processors.config import ProcessorConfig


def bytes_in_flight_limit(config: ProcessorConfig) -> int:
    """``receiver.max_bytes_in_flight``, or half the assembly budget when unset."""
    explicit = config.receiver.max_bytes_in_flight
    return explicit if explicit is not None else max(1, config.assembly.max_buffered_bytes // 2)


def per_peer_limit(config: ProcessorConfig) -> int:
    """``receiver.max_bytes_in_flight_per_peer``, or half the bytes-in-flight limit when unset."""
    explicit = config.receiver.max_bytes_in_flight_per_peer
    return explicit if explicit is not None else max(1, bytes_in_flight_limit(config) // 2)


class BytesInFlight:
    """A counting semaphore on bytes, in total and per peer; thread-safe (the HTTP event loop
    and gRPC workers share it). The oldest request holding bytes may always grow (alone, or
    while others wait): bodies that grow as they arrive could otherwise starve one another."""

    def __init__(self, limit: int, on_change: Callable[[int], object] | None = None, peer_limit: int | None = None,
                 room: Callable[[], int] | None = None, budget: int = 0) -> None:
        self.limit = limit
        self._room = room  # what the memory account has left, when bodies share its budget
        self._budget = budget  # that account's budget
        self.peer_limit = peer_limit if peer_limit is not None else limit
        self.held = 0
        self._by_peer: dict[str, int] = {}
        self._holders: dict[int, None] = {}  # tickets of the reservations holding bytes, oldest first
        self._tickets = itertools.count(1)
        self._lock = threading.Condition()
        self._on_change = on_change  # called with the bytes held after each change

    def ticket(self) -> int:
        return next(self._tickets)

    def _fits(self, nbytes: int, own: int, peer: str, ticket: int | None) -> bool:
        """``own``: what the asking request already holds."""
        room = self._room() if self._room is not None else None
        if self.held == own or (ticket is not None and own and next(iter(self._holders)) == ticket):
            # alone, or the oldest: past the bytes-in-flight limit, but within the memory account's
            # room unless nothing else (buffered spans, queues) is held: a request admitted before
            # the body it waited behind was buffered must not start on top of it
            return room is None or nbytes <= room or room + self.held >= self._budget
        peer_held = self._by_peer.get(peer, 0)
        return (self.held + nbytes <= self.limit and (peer_held == own or peer_held + nbytes <= self.peer_limit)
                and (room is None or nbytes <= room))

    def try_acquire(self, nbytes: int, own: int = 0, peer: str = "", ticket: int | None = None) -> bool:
        """Take ``nbytes`` more for ``peer`` if they fit now."""
        with self._lock:
            if not self._fits(nbytes, own, peer, ticket):
                return False
            self._take(nbytes, peer, ticket, own)
            return True

    def acquire(self, nbytes: int, timeout: float, own: int = 0, peer: str = "", ticket: int | None = None) -> bool:
        """Wait up to ``timeout`` seconds for ``nbytes`` to fit (gRPC worker threads)."""
        with self._lock:
            if not self._lock.wait_for(lambda: self._fits(nbytes, own, peer, ticket), timeout):
                return False
            self._take(nbytes, peer, ticket, own)
            return True

    async def acquire_async(self, nbytes: int, timeout: float, own: int = 0, peer: str = "",
                            ticket: int | None = None) -> bool:
        """``acquire`` for the event loop: polls instead of blocking it."""
        deadline = time.monotonic() + timeout
        while not self.try_acquire(nbytes, own, peer, ticket):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    def release(self, nbytes: int, peer: str = "", ticket: int | None = None, own: int | None = None) -> None:
        if nbytes <= 0:
            return
        with self._lock:
            self._take(-nbytes, peer, ticket, nbytes if own is None else own)
            self._lock.notify_all()

    def _take(self, nbytes: int, peer: str, ticket: int | None, own: int) -> None:
        peer_held = self._by_peer.get(peer, 0)
        self.held += nbytes
        if peer_held + nbytes:
            self._by_peer[peer] = peer_held + nbytes
        else:
            self._by_peer.pop(peer, None)
        if ticket is not None:
            if own + nbytes > 0:
                self._holders.setdefault(ticket)
            else:
                self._holders.pop(ticket, None)
        if self._on_change is not None:
            self._on_change(self.held)


class Reservation:
    """One request's share of :class:`BytesInFlight`, for its peer; grows with the body, released once."""

    def __init__(self, pool: BytesInFlight, peer: str = "") -> None:
        self.pool = pool
        self.peer = peer
        self.nbytes = 0
        self.ticket = pool.ticket()

    def grow_to(self, nbytes: int, timeout: float = 0.0) -> bool:
        """Hold at least ``nbytes``, waiting up to ``timeout`` seconds for room; ``False`` when
        the extra does not fit."""
        extra = nbytes - self.nbytes
        if extra <= 0:
            return True
        if not self.pool.acquire(extra, timeout, self.nbytes, self.peer, self.ticket):
            return False
        self.nbytes = nbytes
        return True

    async def grow_to_async(self, nbytes: int, timeout: float) -> bool:
        """``grow_to`` on the event loop."""
        extra = nbytes - self.nbytes
        if extra <= 0:
            return True
        if not await self.pool.acquire_async(extra, timeout, self.nbytes, self.peer, self.ticket):
            return False
        self.nbytes = nbytes
        return True

    def shrink_to(self, nbytes: int) -> None:
        if nbytes < self.nbytes:
            self.pool.release(self.nbytes - nbytes, self.peer, self.ticket, self.nbytes)
            self.nbytes = nbytes

    def release(self) -> None:
        self.pool.release(self.nbytes, self.peer, self.ticket, self.nbytes)
        self.nbytes = 0
