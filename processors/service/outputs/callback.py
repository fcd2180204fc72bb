"""Plain callbacks as an exporter: ``fn(run, diagnosis)`` after each (re)diagnosis (tests, benchmarks)."""

from __future__ import annotations

import logging
from typing import Callable

from mast_otel.processors.model import Diagnosis, Run
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.outputs.base import Batch

log = logging.getLogger(__name__)

Listener = Callable[[Run, Diagnosis], None]


class CallbackExporter(Lifecycle):
    """Calls ``fn`` for each diagnosed run whose spans are held (not for merged judge findings)."""

    def __init__(self, fn: Listener, name: str = "callback") -> None:
        self.fn = fn
        self.name = name

    def export(self, batch: Batch) -> None:
        for item in batch.runs:
            if item.run is None or item.change == "findings":
                continue
            try:
                self.fn(item.run, item.diagnosis)
            except Exception:
                log.exception("diagnosis listener %r failed", self.fn)
