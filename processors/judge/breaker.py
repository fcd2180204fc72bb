"""A circuit breaker for the judge's provider.

After ``failure_threshold`` consecutive provider failures the circuit opens and requests
are refused without calling out; after ``reset_seconds`` one trial request is let through
(half-open). Its success closes the circuit, its failure opens it again.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Literal

State = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    def __init__(self, failure_threshold: int, reset_seconds: float, clock: Callable[[], float] = time.monotonic):
        self.failure_threshold = failure_threshold
        self.reset_seconds = reset_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_in_flight = False

    @property
    def state(self) -> State:
        with self._lock:
            return self._state(self._clock())

    def _state(self, now: float) -> State:
        if self._opened_at is None:
            return "closed"
        return "half_open" if now - self._opened_at >= self.reset_seconds else "open"

    def allow(self) -> bool:
        """Whether a request may go out now (in half-open state, only one at a time)."""
        with self._lock:
            state = self._state(self._clock())
            if state == "closed":
                return True
            if state == "half_open" and not self._trial_in_flight:
                self._trial_in_flight = True
                return True
            return False

    def record_success(self) -> None:
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial_in_flight = False

    def record_failure(self) -> None:
        with self._lock:
            self._failures += 1
            if self._trial_in_flight or self._failures >= self.failure_threshold:
                self._opened_at = self._clock()
            self._trial_in_flight = False
