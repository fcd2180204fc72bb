"""Web sessions ended by logout before their cookie expires.

A session cookie is signed, not stored, so it stays valid until its expiry wherever it is
copied; logging out records it here and every later request carrying it is refused. With a
store, the logout is recorded there too (a hash of the cookie, never the cookie), so every
replica sharing the store, and this one after a restart, refuse it as well.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from typing import Protocol

log = logging.getLogger(__name__)


class SharedLogouts(Protocol):
    """Where logouts are shared: the diagnosis store (``web_logouts``)."""

    @property
    def errors(self) -> tuple[type[Exception], ...]: ...

    def revoke_session(self, cookie_hash: str, expires_at: int) -> None: ...

    def session_revoked(self, cookie_hash: str) -> bool: ...


def cookie_hash(value: str) -> str:
    """What the store keeps of a logged-out cookie: enough to recognise it, not to use it."""
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()


class RevokedSessions:
    """Session cookies logged out before their expiry, each kept until it would have expired
    (after that the expiry refuses it anyway). Bounded: past ``limit`` the soonest to expire
    is forgotten first (the least a forgotten one could still be used for).

    ``shared`` (set once the store is open) holds every replica's logouts: a cookie this process
    did not see logged out is looked up there. While the store cannot answer, only this
    process's logouts are refused (logged once per outage)."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self.shared: SharedLogouts | None = None
        self._expiry: dict[str, int] = {}
        self._lock = threading.Lock()
        self._store_failing = False

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
        shared = self.shared
        if shared is not None:
            try:
                shared.revoke_session(cookie_hash(value), expires)
            except shared.errors as exc:
                log.warning("the store could not record a logout (%s); only this replica refuses the session",
                            type(exc).__name__)

    def __contains__(self, value: object) -> bool:
        if value in self._expiry:
            return True
        shared = self.shared
        if shared is None or not isinstance(value, str):
            return False
        try:
            revoked = shared.session_revoked(cookie_hash(value))
        except shared.errors as exc:
            if not self._store_failing:
                log.warning("the store could not say whether a web session was logged out (%s); only this "
                            "replica's logouts are refused until it answers", type(exc).__name__)
            self._store_failing = True
            return False
        self._store_failing = False
        return revoked

    def __len__(self) -> int:
        return len(self._expiry)
