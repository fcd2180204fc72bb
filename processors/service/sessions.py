"""Web sessions ended by logout before their cookie expires.

A session cookie is signed, not stored, so it stays valid until its expiry wherever it is
copied; logging out records it here and every later request carrying it is refused.
"""

from __future__ import annotations

import threading
import time


class RevokedSessions:
    """Session cookies logged out before their expiry, each kept until it would have expired
    (after that the expiry refuses it anyway). Bounded: past ``limit`` the soonest to expire
    is forgotten first (the least a forgotten one could still be used for)."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self._expiry: dict[str, int] = {}
        self._lock = threading.Lock()

    def revoke(self, value: str, expires: int, now: float | None = None) -> None:
        now = time.time() if now is None else now
        with self._lock:
            expiry = self._expiry
            expiry[value] = expires
            if len(expiry) > self.limit:
                for old in [v for v, e in expiry.items() if e <= now]:
                    del expiry[old]
                while len(expiry) > self.limit:
                    del expiry[min(expiry, key=expiry.__getitem__)]

    def __contains__(self, value: object) -> bool:
        return value in self._expiry

    def __len__(self) -> int:
        return len(self._expiry)
