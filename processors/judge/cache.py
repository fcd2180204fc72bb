"""Judge verdicts remembered by what the judge saw, so an unchanged run is never paid for twice.

The key covers the judge model, the prompt version, the output mode and the rendered run
text (step ids, not span ids), so a verdict is reusable by any run that renders the same way.
With a shared store (replicas on one PostgreSQL database) a verdict one replica paid for is
read by the others: the local LRU answers first, the store on a miss.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from typing import Protocol

from mast_otel.processors.judge.schema import Assessment

log = logging.getLogger(__name__)


class SharedVerdicts(Protocol):
    """Where replicas share verdicts (the shared diagnosis store), as JSON text by cache key."""

    errors: tuple[type[Exception], ...]

    def judge_verdict(self, key: str) -> str | None: ...

    def put_judge_verdict(self, key: str, assessment: str) -> None: ...


def cache_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


class VerdictCache:
    """A thread-safe LRU of validated assessments; ``max_entries=0`` disables it."""

    def __init__(self, max_entries: int, shared: SharedVerdicts | None = None) -> None:
        self.max_entries = max_entries
        self.shared = shared if max_entries > 0 else None
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Assessment] = OrderedDict()

    def get(self, key: str) -> Assessment | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
                return value
        text = self._shared("read", lambda: self.shared.judge_verdict(key)) if self.shared is not None else None
        if text is None:
            return None
        value = Assessment.model_validate_json(text)
        self._remember(key, value)
        return value

    def put(self, key: str, value: Assessment) -> None:
        if self.max_entries <= 0:
            return
        self._remember(key, value)
        if self.shared is not None:
            self._shared("write", lambda: self.shared.put_judge_verdict(key, value.model_dump_json()))

    def _remember(self, key: str, value: Assessment) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def _shared(self, what: str, operation):
        """A shared-store call; the store refusing costs a judge call at worst, never the verdict."""
        errors = self.shared.errors if self.shared is not None else ()
        try:
            return operation()
        except errors as exc:
            log.warning("the shared judge verdicts could not %s (%s: %s); this replica's own cache carries on",
                        what, type(exc).__name__, exc)
            return None

    def __len__(self) -> int:
        return len(self._entries)
