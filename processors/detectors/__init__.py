"""Rule detectors: pure functions from a run to findings.

Contract used by the pipeline, the offline commands and the benchmarks:

- ``diagnose(run, config) -> list[Finding]``: every rule finding for a whole run.
- ``LiveDetection(config)``: one per in-flight trace; ``observe(span) -> list[Finding]``
  returns findings newly raised by that span (marked ``live=True``).
"""

from __future__ import annotations

from mast_otel.processors.config import DetectionConfig
from mast_otel.processors.model import Finding, Run, Span


def diagnose(run: Run, config: DetectionConfig | None = None) -> list[Finding]:
    raise NotImplementedError("detectors are being written (issue 4)")


class LiveDetection:
    def __init__(self, config: DetectionConfig | None = None) -> None:
        self.config = config or DetectionConfig()

    def observe(self, span: Span) -> list[Finding]:
        raise NotImplementedError("detectors are being written (issue 4)")
