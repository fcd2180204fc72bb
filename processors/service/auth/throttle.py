"""Failed authentication slowed per client address, however many connections it uses.

A token bucket per address: each wrong token or session cookie an address presents takes one
token, tokens come back at ``per_minute``, and an address with none left is answered 429 with
``Retry-After`` (gRPC ``RESOURCE_EXHAUSTED``) on every request that needs a token, before its
credentials are compared, so a right guess made while throttled is not recognised either. An
IPv6 address counts by its /64 network, which one host usually holds whole. Requests that
present nothing are refused (401) without being counted: they guess nothing.

Addresses are kept least recently failed first, at most ``max_addresses`` (the oldest dropped
when a new one fails), so memory stays bounded whatever the number of senders. Every counted
failure is logged with its address and path, never what was presented, and the moment an
address is throttled; refusals while throttled are not logged one by one, so a flood of
guesses cannot flood the log.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from mast_otel.processors.config import AuthFailureConfig
from mast_otel.processors.service.auth.logouts import RevokedSessions

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Denied:
    """Why a request's credentials were not accepted: wrong (401) or too many wrong ones (429)."""

    retry_after: int  # seconds until the address may try again; 0 when it is not throttled

    @property
    def throttled(self) -> bool:
        return self.retry_after > 0

    @property
    def status(self) -> int:
        return 429 if self.throttled else 401

    @property
    def message(self) -> str:
        if self.throttled:
            return f"too many failed authentication attempts from this address; retry in {self.retry_after} s"
        return "missing or invalid bearer token"

    @property
    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)} if self.throttled else {"WWW-Authenticate": "Bearer"}


WRONG = Denied(0)


@lru_cache(maxsize=4096)  # parsed once per sender, not per request
def address_key(address: str | None) -> str:
    """The bucket an address fills: itself, or its /64 network for IPv6."""
    if not address:
        return "unknown"
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.ip_network(f"{parsed}/64", strict=False))
    return str(parsed)


class AuthThrottle:
    """Token buckets of failed attempts per address (thread-safe: HTTP and gRPC threads share one)."""

    def __init__(self, config: AuthFailureConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, as of)
        self._lock = threading.Lock()
        # logged-out session cookies; kept beside the failure counts: both are what this process knows of credentials
        self.revoked_sessions = RevokedSessions()

    def _tokens(self, key: str, now: float) -> float:
        tokens, since = self._buckets.get(key, (self.config.burst, now))
        return min(self.config.burst, tokens + (now - since) * self.config.per_minute / 60)

    def _wait(self, tokens: float) -> int:
        """Whole seconds until one token is back (0: one is there)."""
        return 0 if tokens >= 1 else max(1, math.ceil((1 - tokens) * 60 / self.config.per_minute))

    def judge(self, address: str | None, path: str, valid: bool, presented: bool = True) -> Denied | None:
        """``None`` when the request may go on; else why not. ``valid``: its credentials are right;
        ``presented``: it sent any (a wrong one counts against its address)."""
        if valid and not self._buckets:  # the usual case: no address has failed lately
            return None
        key = address_key(address)
        now = self._clock()
        with self._lock:
            wait = self._wait(self._tokens(key, now)) if key in self._buckets else 0
            if wait:
                return Denied(wait)
            if valid or not presented:
                return None if valid else WRONG
            tokens = self._tokens(key, now) - 1
            self._buckets[key] = (tokens, now)
            self._buckets.move_to_end(key)
            while len(self._buckets) > self.config.max_addresses:
                self._buckets.popitem(last=False)
            wait = self._wait(tokens)
        log.warning("authentication failed from %s on %s", key, path)
        if wait:
            log.warning("throttling authentication from %s: its failed attempts used up receiver.auth_failures.burst; "
                        "its requests are refused (429) for %d s", key, wait)
        return WRONG

    @property
    def addresses(self) -> int:
        """Addresses with failures remembered (bounded by ``max_addresses``)."""
        with self._lock:
            return len(self._buckets)
