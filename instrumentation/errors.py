"""The instrumentation never breaks the agent: its own failures are logged once and swallowed."""

from __future__ import annotations

import logging
import threading

logger = logging.getLogger("mast_otel.instrumentation")

_seen: set[str] = set()
_lock = threading.Lock()


def log_once(kind: str, exc: BaseException | None = None) -> None:
    """Log an internal failure of ``kind`` the first time it happens in this process."""
    with _lock:
        if kind in _seen:
            return
        _seen.add(kind)
    logger.warning("mast-otel instrumentation: %s failed; continuing without it (logged once)",
                   kind, exc_info=exc)
