"""OTLP/gRPC connections capped per client address, and idle ones closed sooner near the total cap.

grpcio accepts connections inside its C core and shows Python only calls: it has a total cap
(``grpc.max_allowed_incoming_connections``) and one idle time, but no per-address cap and no
hook at accept. So the connections are found where the operating system keeps them: every
``interval`` seconds the process's own sockets whose local port is the receiver's are listed
(``/proc/self/fd``, Linux), grouped by client address, and the ones to drop are shut down
through a duplicate of their descriptor. The gRPC core then sees the connection end, as if the
client had closed it, and frees it itself; the descriptor stays the core's.

What is dropped: past ``per_address`` connections from one address, the newest idle ones
(then the newest) beyond the cap; and while the open connections reach ``near_fraction`` of the
total cap, every connection without a call for ``near_cap_idle_seconds``. Which connection has
a call is known from the calls' peer strings (``ipv4:10.0.0.9:41234``), which name the same
client port the socket does.

Where ``/proc/self/fd`` does not exist the sweeper does nothing (logged once at start).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Callable, NamedTuple

log = logging.getLogger(__name__)

FD_FOLDER = "/proc/self/fd"


class Connection(NamedTuple):
    address: str
    port: int


def peer_connection(peer: str) -> Connection | None:
    """The client address and port of a gRPC peer string (``ipv6:[::1]:41234`` -> ``("::1", 41234)``)."""
    if not peer.startswith(("ipv4:", "ipv6:")):
        return None
    host, _, port = peer.split(":", 1)[1].rpartition(":")
    try:
        return Connection(host.strip("[]"), int(port))
    except ValueError:
        return None


def _dropped(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already gone
        pass


class ConnectionSweeper:
    """Caps the receiver's connections per client address and closes idle ones near the total cap.

    ``call_started``/``call_ended`` are told of every call (a dict update each); ``sweep`` runs
    on its own thread between ``start`` and ``stop``. ``on_drop(reason)`` counts each connection
    dropped (reason ``connections_per_address`` or ``idle_near_cap``)."""

    def __init__(self, per_address: int, total: int, near_cap_idle_seconds: float,
                 on_drop: Callable[[str], object], near_fraction: float = 0.75, interval: float = 0.5) -> None:
        self.per_address = per_address
        self.total = total
        self.near_cap_idle_seconds = near_cap_idle_seconds
        self.near_fraction = near_fraction
        self.interval = interval
        self.port: int | None = None
        self._on_drop = on_drop
        self._calls: dict[Connection, int] = {}  # connection -> calls in progress
        self._last_call: dict[Connection, float] = {}  # connection -> when its last call started or ended
        self._first_seen: dict[Connection, float] = {}  # connection -> when a sweep first found it
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def call_started(self, peer: str) -> None:
        connection = peer_connection(peer)
        if connection is not None:
            with self._lock:
                self._calls[connection] = self._calls.get(connection, 0) + 1
                self._last_call[connection] = time.monotonic()

    def call_ended(self, peer: str) -> None:
        connection = peer_connection(peer)
        if connection is not None:
            with self._lock:
                left = self._calls.pop(connection, 1) - 1
                if left:
                    self._calls[connection] = left
                self._last_call[connection] = time.monotonic()

    def start(self, port: int) -> None:
        self.port = port
        if not os.path.isdir(FD_FOLDER):
            log.info("OTLP/gRPC connections are capped in total only: %s is not available here", FD_FOLDER)
            return
        self._thread = threading.Thread(target=self._run, name="mast-otel-grpc-connections", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        failing = False
        while not self._stopped.wait(self.interval):
            try:
                self.sweep()
                failing = False
            except Exception:  # the next sweep tries again; logged once per run of failures
                if not failing:
                    log.exception("sweeping OTLP/gRPC connections failed")
                failing = True

    def _open(self) -> dict[Connection, socket.socket]:
        """The receiver's open connections, each as a duplicate of its descriptor (closed by the caller)."""
        found: dict[Connection, socket.socket] = {}
        for name in os.listdir(FD_FOLDER):
            try:
                if not os.readlink(f"{FD_FOLDER}/{name}").startswith("socket:"):
                    continue
                sock = socket.socket(fileno=os.dup(int(name)))
            except (OSError, ValueError):  # closed meanwhile, or not a socket any more
                continue
            try:
                # decided on the duplicate itself: a number reused since the listing is judged as what it is now
                if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM \
                        or sock.getsockname()[1] != self.port:
                    sock.close()
                    continue
                host, port = sock.getpeername()[:2]
            except OSError:  # the listening socket, or one not connected
                sock.close()
                continue
            if host.startswith("::ffff:") and "." in host:  # an IPv4 client of a dual-stack socket, as gRPC names it
                host = host[len("::ffff:"):]
            connection = Connection(host, port)
            if connection in found:
                sock.close()
            else:
                found[connection] = sock
        return found

    def sweep(self) -> dict[str, int]:
        """One pass: the connections dropped, by reason."""
        dropped = {"connections_per_address": 0, "idle_near_cap": 0}
        found = self._open()
        try:
            now = time.monotonic()
            with self._lock:
                for connection in list(self._first_seen):
                    if connection not in found:
                        del self._first_seen[connection]
                for connection in list(self._last_call):
                    if connection not in found and connection not in self._calls:
                        del self._last_call[connection]
                for connection in found:
                    self._first_seen.setdefault(connection, now)
                busy = {c for c in found if self._calls.get(c)}
                active = {c: max(self._first_seen[c], self._last_call.get(c, 0.0)) for c in found}
            by_address: dict[str, list[Connection]] = {}
            for connection in found:
                by_address.setdefault(connection.address, []).append(connection)
            gone: set[Connection] = set()
            for connections in by_address.values():
                if len(connections) > self.per_address:
                    # keep the busy and the longest known; drop the newest idle ones first
                    connections.sort(key=lambda c: (c not in busy, self._first_seen[c]))
                    for connection in connections[self.per_address:]:
                        _dropped(found[connection])
                        gone.add(connection)
                        dropped["connections_per_address"] += 1
            if len(found) - len(gone) >= self.near_fraction * self.total:
                for connection in found:
                    if connection not in gone and connection not in busy \
                            and now - active[connection] >= self.near_cap_idle_seconds:
                        _dropped(found[connection])
                        gone.add(connection)
                        dropped["idle_near_cap"] += 1
        finally:
            for sock in found.values():
                sock.close()
        for reason, count in dropped.items():
            for _ in range(count):
                self._on_drop(reason)
        if any(dropped.values()):
            log.debug("closed OTLP/gRPC connections: %s", dropped)
        return dropped
