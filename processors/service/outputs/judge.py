"""The judge trigger: hands diagnosed runs to the judge service (which feeds its findings back
through the merge stage's typed input)."""

from __future__ import annotations

from mast_otel.processors.judge.service import JudgeService
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.outputs.base import Batch


class JudgeTrigger(Lifecycle):
    """Offers each (re)diagnosed run, and each held run whose outcome changed, to the judge's policy."""

    name = "judge"

    def __init__(self, service: JudgeService) -> None:
        self.service = service

    def _start(self) -> None:
        self.service.start()

    def _shutdown(self, timeout: float) -> None:
        self.service.stop(timeout)

    def export(self, batch: Batch) -> None:
        for item in batch.runs:
            if item.run is not None and item.change != "findings":
                self.service.on_diagnosis(item.run, item.diagnosis)
