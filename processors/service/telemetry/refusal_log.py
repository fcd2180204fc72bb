"""Refused input, told in the log: why, and to which client address.

A user asking "why don't my spans show up?" reads the log, not ``/metrics``. Each refusal of
export input (400, 408, 413, 415, 429 and 503 on OTLP/HTTP, their gRPC codes, spans dropped
from an accepted request as the OTLP partial-success answer names them) is logged at WARNING
with its reason and the client address. A client retrying a refused request would fill the
log, so one line is written per (reason, client address) per ``receiver.refusal_log_seconds``;
the next line written for that pair says how many were left out since the last one. Lines hold
the reason, our own description of it and counts: never credentials, headers or request content.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Callable

log = logging.getLogger("mast_otel.processors.service.refusals")

MAX_PAIRS = 10_000  # (reason, client) pairs remembered; beyond it the least recently logged is forgotten
MAX_DETAIL_CHARS = 300


class RefusalLog:
    """Rate-limited WARNING lines about refused input, per (reason, client address)."""

    def __init__(self, interval_seconds: float, clock: Callable[[], float] = time.monotonic,
                 max_pairs: int = MAX_PAIRS) -> None:
        self.interval = interval_seconds
        self.clock = clock
        self._max_pairs = max_pairs
        self._lock = threading.Lock()
        # (reason, client) -> [time of the last line written, refusals left out since]
        self._pairs: OrderedDict[tuple[str, str], list[float]] = OrderedDict()

    def refused(self, protocol: str, reason: str, client: str | None, status: str, detail: str) -> None:
        """Log one refusal (``status``: ``413``, ``RESOURCE_EXHAUSTED``...), unless its pair had a line lately."""
        key = (reason, client or "unknown")
        now = self.clock()
        with self._lock:
            seen = self._pairs.get(key)
            if seen is not None and now - seen[0] < self.interval:
                seen[1] += 1
                return
            left_out = int(seen[1]) if seen is not None else 0
            self._pairs[key] = [now, 0]
            self._pairs.move_to_end(key)
            while len(self._pairs) > self._max_pairs:
                self._pairs.popitem(last=False)
        more = (f"; {left_out} more refused for this reason from this address since the last such line, not logged"
                if left_out else "")
        log.warning("refused %s export from %s: %s (%s): %s%s", protocol, key[1], reason, status,
                    detail[:MAX_DETAIL_CHARS], more)


def dropped_detail(counts: dict[str, int]) -> str:
    """``"3 span(s) rejected: malformed_span 2, trace_span_limit 1"`` (reasons, never content)."""
    total = sum(counts.values())
    return f"{total} span(s) not kept: " + ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items()))
