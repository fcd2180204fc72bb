"""The OTLP/gRPC receiver's thread pool: calls waiting for a thread are served fairly by client
address, and counted.

grpcio hands each call to the pool as it arrives; a plain pool serves them first come, first
served, so an address that keeps opening streams (each stalling until it is cancelled) keeps a
queue in front of everyone else's calls. Here the next call to get a thread is the oldest one
of the address with the fewest calls running, and addresses whose calls stalled recently (the
receiver says so) come after all others: a normal exporter waits for one thread to free, never
behind another address's queue, and a gateway's concurrent calls are served in turn with
everyone else's.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections import deque
from concurrent import futures
from typing import Callable


def peer_address(peer: str) -> str:
    """The client address of a gRPC peer string (``ipv4:10.0.0.9:41234`` -> ``10.0.0.9``)."""
    address = peer.split(":", 1)[1] if peer.startswith(("ipv4:", "ipv6:")) else peer
    return address.rsplit(":", 1)[0].strip("[]") if address.count(":") else address


class FairQueue:
    """The work queue of :class:`FairPool` (``put``, ``get``, ``get_nowait``, as the thread pool
    uses them): items by address, the oldest of the address with the fewest running first."""

    def __init__(self, running: Callable[[str], int], stalled: Callable[[str], bool]) -> None:
        self._running = running
        self._stalled = stalled
        self._items: dict[str, deque[tuple[int, object]]] = {}
        self._order = itertools.count()
        self._stops = 0  # the pool's shutdown sentinels (None), handed out once no call is left
        self._changed = threading.Condition()
        self.next_address = ""  # set by the pool just before each put

    def put(self, item: object) -> None:
        with self._changed:
            if item is None:
                self._stops += 1
            else:
                self._items.setdefault(self.next_address, deque()).append((next(self._order), item))
            self._changed.notify()

    def _take(self) -> object:
        address = min(self._items, key=lambda a: (self._stalled(a), self._running(a), self._items[a][0][0]))
        waiting = self._items[address]
        _, item = waiting.popleft()
        if not waiting:
            del self._items[address]
        return item

    def get(self, block: bool = True, timeout: float | None = None) -> object:
        with self._changed:
            if not self._changed.wait_for(lambda: self._items or self._stops, timeout if block else 0):
                raise queue.Empty
            if self._items:
                return self._take()
            self._stops -= 1
            return None

    def get_nowait(self) -> object:
        return self.get(block=False)

    def waiting(self) -> int:
        with self._changed:
            return sum(map(len, self._items.values()))


class FairPool(futures.ThreadPoolExecutor):
    """A thread pool for grpcio's server whose waiting calls are served by :class:`FairQueue`;
    ``waiting()`` is how many calls wait for a thread."""

    def __init__(self, max_workers: int, thread_name_prefix: str, stall_memory_seconds: float) -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix=thread_name_prefix)
        self._running: dict[str, int] = {}
        self._stalls: dict[str, float] = {}  # address -> when one of its calls last stalled
        self._stall_memory = stall_memory_seconds
        self._count = threading.Lock()
        self._submitting = threading.Lock()
        self._fair = FairQueue(lambda address: self._running.get(address, 0), self.stalled_lately)
        self._work_queue = self._fair  # type: ignore[assignment]  # the executor's threads take from it

    def stalled(self, address: str) -> None:
        """One of ``address``'s calls stalled: its waiting calls go after everyone else's for a while."""
        with self._count:
            if len(self._stalls) > 10_000:  # bounded: the oldest are forgotten
                for old in sorted(self._stalls, key=self._stalls.__getitem__)[:5_000]:
                    del self._stalls[old]
            self._stalls[address] = time.monotonic()

    def stalled_lately(self, address: str) -> bool:
        """Whether one of ``address``'s calls stalled within the last ``stall_memory_seconds``."""
        at = self._stalls.get(address)
        return at is not None and time.monotonic() - at < self._stall_memory

    @staticmethod
    def _address(args: tuple) -> str:
        """The client address of a call grpcio submits (its request event is the second argument)."""
        try:
            peer = args[1].call.peer()
            return peer_address(peer.decode() if isinstance(peer, bytes) else str(peer))
        except (AttributeError, IndexError, TypeError, UnicodeDecodeError):  # another grpcio: first come, first served
            return ""

    def submit(self, fn, /, *args, **kwargs):
        address = self._address(args)

        def run():
            with self._count:
                self._running[address] = self._running.get(address, 0) + 1
            try:
                return fn(*args, **kwargs)
            finally:
                with self._count:
                    left = self._running.pop(address) - 1
                    if left:
                        self._running[address] = left

        with self._submitting:  # the queue reads the address on put
            self._fair.next_address = address
            return super().submit(run)

    def waiting(self) -> int:
        return self._fair.waiting()
