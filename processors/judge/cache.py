"""Judge verdicts remembered by what the judge saw, so an unchanged run is never paid for twice.

The key covers the judge model, the prompt version, the output mode and the rendered run
text (step ids, not span ids), so a verdict is reusable by any run that renders the same way.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from mast_otel.processors.judge.schema import Assessment


def cache_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


class VerdictCache:
    """A thread-safe LRU of validated assessments; ``max_entries=0`` disables it."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, Assessment] = OrderedDict()

    def get(self, key: str) -> Assessment | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: str, value: Assessment) -> None:
        if self.max_entries <= 0:
            return
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
