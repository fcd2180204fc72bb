"""Spending limits for the judge: tokens per minute and dollars per hour, over sliding windows.

A request reserves its estimated tokens and cost before it is sent and settles the real
figures when it returns, so concurrent requests cannot overshoot together. A request that
does not fit is refused (the service skips and counts it); offline evaluation may instead
wait for room with :meth:`Budget.wait_time`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class Reservation:
    tokens: int
    usd: float
    at: float
    _entry: list = field(default_factory=list, repr=False)  # [at, tokens, usd] shared with the window


class Budget:
    """Thread-safe sliding-window limits; ``clock`` is injectable for tests."""

    TOKEN_WINDOW = 60.0
    COST_WINDOW = 3600.0

    def __init__(self, tokens_per_minute: int, usd_per_hour: float, clock: Callable[[], float] = time.monotonic):
        self.tokens_per_minute = tokens_per_minute
        self.usd_per_hour = usd_per_hour
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: deque[list] = deque()  # [at, tokens, usd], oldest first

    def _expire(self, now: float) -> None:
        while self._entries and now - self._entries[0][0] >= self.COST_WINDOW:
            self._entries.popleft()

    def _used(self, now: float) -> tuple[int, float]:
        tokens = sum(e[1] for e in self._entries if now - e[0] < self.TOKEN_WINDOW)
        usd = sum(e[2] for e in self._entries)
        return tokens, usd

    def fits_ever(self, tokens: int, usd: float) -> bool:
        """Whether a request this size could pass even with an empty window."""
        return tokens <= self.tokens_per_minute and usd <= self.usd_per_hour

    def try_reserve(self, tokens: int, usd: float) -> Reservation | None:
        """Reserve room for a request, or ``None`` when it would exceed a limit."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            used_tokens, used_usd = self._used(now)
            if used_tokens + tokens > self.tokens_per_minute or used_usd + usd > self.usd_per_hour:
                return None
            entry = [now, tokens, usd]
            self._entries.append(entry)
            return Reservation(tokens, usd, now, entry)

    def settle(self, reservation: Reservation, tokens: int, usd: float) -> None:
        """Replace a reservation's estimate with what the request really used."""
        with self._lock:
            reservation._entry[1] = tokens
            reservation._entry[2] = usd

    def wait_time(self, tokens: int, usd: float) -> float:
        """Seconds until a request of this size would fit (0 if it fits now)."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            used_tokens, used_usd = self._used(now)
            wait = 0.0
            if used_tokens + tokens > self.tokens_per_minute:
                wait = max(wait, self._release_time(now, tokens - (self.tokens_per_minute - used_tokens), 1, self.TOKEN_WINDOW))
            if used_usd + usd > self.usd_per_hour:
                wait = max(wait, self._release_time(now, usd - (self.usd_per_hour - used_usd), 2, self.COST_WINDOW))
            return wait

    def _release_time(self, now: float, needed: float, index: int, window: float) -> float:
        freed = 0.0
        for entry in self._entries:
            if now - entry[0] >= window:
                continue
            freed += entry[index]
            if freed >= needed:
                return max(0.0, entry[0] + window - now)
        return window
