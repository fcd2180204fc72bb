"""One lifecycle for every part of the processor (receivers, stages, exporters).

Modelled on the OpenTelemetry Collector's ``component.Component``: ``start`` once,
``shutdown(timeout)`` once, and both safe to call again or in any order, so the host that
owns the start and shutdown order never needs to know what a part did or did not get to.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

DEFAULT_SHUTDOWN_SECONDS = 10.0


@runtime_checkable
class Component(Protocol):
    """A part the host starts and shuts down."""

    def start(self) -> None: ...

    def shutdown(self, timeout: float = DEFAULT_SHUTDOWN_SECONDS) -> None: ...


class Lifecycle:
    """Base for components: subclasses implement ``_start``/``_shutdown``; this class makes
    ``start`` idempotent and ``shutdown`` a no-op when never started or already shut down."""

    _lifecycle_state: str = "new"  # new | running | stopped
    _lifecycle_lock = threading.RLock()  # shared: transitions are rare and short

    def _start(self) -> None:
        """Acquire threads, sockets, connections."""

    def _shutdown(self, timeout: float) -> None:
        """Release what ``_start`` acquired, within ``timeout`` seconds where it can wait."""

    def start(self) -> None:
        with self._lifecycle_lock:
            if self._lifecycle_state != "new":
                return
            self._lifecycle_state = "running"
        try:
            self._start()
        except BaseException:
            self.shutdown()  # release what a half-done start acquired
            raise

    def shutdown(self, timeout: float = DEFAULT_SHUTDOWN_SECONDS) -> None:
        with self._lifecycle_lock:
            state = self._lifecycle_state
            if state == "new":
                return  # never started: nothing to release
            self._lifecycle_state = "stopped"
        if state == "running":
            self._shutdown(timeout)

    @property
    def running(self) -> bool:
        return self._lifecycle_state == "running"
