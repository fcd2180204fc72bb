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

Decoding a body costs several times its size for a moment (the protobuf parse, the decoded
spans), beyond the body itself: :func:`decode_cost` estimates it and a request reserves that
in the memory account (not the bytes-in-flight limit) while it decodes, refused like any other
reservation when the account has no room for it, unless the account holds nothing but bodies
in flight. Without it a 12 MB body admitted beside a nearly full account took 76-84 MB of RSS
that nothing had charged.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from typing import Callable

from mast_otel.processors.config import ProcessorConfig


# Peak RSS a decode adds beyond the body, per byte of body, measured on a fresh process (VmHWM):
# protobuf agent runs with content 3.7 (2.3 of it upb's parse, the rest the decoded spans), bodies
# of 200,000-character ids 2.2-2.4; keeping each span's wire form for re-export 3.0-6.4; OTLP/JSON
# 2.0-8.2 (``json.loads`` builds every value before the spans are read). Each rounded up.
DECODE_COST_PROTOBUF = 4
DECODE_COST_REEXPORTED = 7
DECODE_COST_JSON = 9


def decode_cost(body_bytes: int, *, as_json: bool, keep_raw: bool) -> int:
    """What decoding a body of ``body_bytes`` may hold at its peak, beyond the body itself."""
    factor = DECODE_COST_JSON if as_json else DECODE_COST_REEXPORTED if keep_raw else DECODE_COST_PROTOBUF
    return factor * body_bytes


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
                 room: Callable[[], int] | None = None, budget: int = 0,
                 make_room: Callable[[int], object] | None = None) -> None:
        self.limit = limit
        self._room = room  # what the memory account has left, when bodies share its budget
        self._make_room = make_room  # frees what gives way first (retained runs) until n bytes fit the room
        self._budget = budget  # that account's budget
        self.peer_limit = peer_limit if peer_limit is not None else limit
        self.held = 0
        self.decoding = 0  # what the bodies being decoded cost beyond their bytes (decode_cost): the account's, not the limit's
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

    def _decode_fits(self, nbytes: int) -> bool:
        """A decode's cost fits the memory account's room, or the account holds nothing but bodies
        in flight (a body larger than the room is decoded alone; the envelope's second budget covers it)."""
        room = self._room() if self._room is not None else None
        return room is None or nbytes <= room or room + self.held >= self._budget

    def try_decode(self, nbytes: int) -> bool:
        """Reserve ``nbytes`` of decoding cost if they fit now."""
        with self._lock:
            if not self._decode_fits(nbytes):
                return False
            self.decoding += nbytes
            return True

    def _decode_or_make_room(self, nbytes: int) -> bool:
        """``try_decode``, after freeing what gives way first when it does not fit at once: runs
        retained for late spans may hold the account up to 90% of its budget until a request needs
        the room, and a decode needs several times a body's room."""
        if self.try_decode(nbytes):
            return True
        if self._make_room is None:
            return False
        self._make_room(nbytes)
        return self.try_decode(nbytes)

    def acquire_decode(self, nbytes: int, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``nbytes`` of decoding cost to fit (gRPC worker threads)."""
        if self._decode_or_make_room(nbytes):
            return True
        with self._lock:
            if not self._lock.wait_for(lambda: self._decode_fits(nbytes), timeout):
                return False
            self.decoding += nbytes
            return True

    async def acquire_decode_async(self, nbytes: int, timeout: float) -> bool:
        """``acquire_decode`` for the event loop: polls instead of blocking it."""
        if self._decode_or_make_room(nbytes):
            return True
        deadline = time.monotonic() + timeout
        while not self.try_decode(nbytes):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    def release_decode(self, nbytes: int) -> None:
        if nbytes <= 0:
            return
        with self._lock:
            self.decoding -= nbytes
            self._lock.notify_all()

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
        self.decoding = 0  # the decoding cost reserved for its body, while it is decoded
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

    def decode(self, nbytes: int, timeout: float = 0.0) -> bool:
        """Reserve ``nbytes`` of decoding cost (see :func:`decode_cost`), waiting up to ``timeout``
        seconds for room; ``False`` when it does not fit."""
        if not self.pool.acquire_decode(nbytes, timeout):
            return False
        self.decoding += nbytes
        return True

    async def decode_async(self, nbytes: int, timeout: float) -> bool:
        """``decode`` on the event loop."""
        if not await self.pool.acquire_decode_async(nbytes, timeout):
            return False
        self.decoding += nbytes
        return True

    def decoded(self) -> None:
        """The body is decoded: its decoding cost is given back (its spans are charged as buffered)."""
        self.pool.release_decode(self.decoding)
        self.decoding = 0

    def release(self) -> None:
        self.decoded()
        self.pool.release(self.nbytes, self.peer, self.ticket, self.nbytes)
        self.nbytes = 0
