"""OTLP re-export of enriched spans to any number of endpoints.

The enrichment (which spans, with which attributes) is computed once per run and the encoded
request is queued on every endpoint; each endpoint has its own queue, thread and retries, so a
slow or dead backend never holds back another.
"""

from __future__ import annotations

from typing import Sequence

from mast_otel.processors.model import Span
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.exporter import OTLPReexporter, changed_span_ids, encode_request, enrich_spans
from mast_otel.processors.service.outputs.base import Batch


class OTLPExporter(Lifecycle):
    """Re-exports each diagnosed run's spans (only what changed, on re-diagnosis) to ``endpoints``."""

    name = "otlp"

    def __init__(self, endpoints: Sequence[OTLPReexporter]) -> None:
        if not endpoints:
            raise ValueError("OTLPExporter needs at least one endpoint")
        self.endpoints = list(endpoints)
        self._pass_all = [e for e in self.endpoints if e.config.export_all_spans]

    def _start(self) -> None:
        for endpoint in self.endpoints:
            endpoint.start()

    def _shutdown(self, timeout: float) -> None:
        for endpoint in self.endpoints:  # each drains within the timeout, concurrently queued
            endpoint.stop(timeout)

    def forward(self, spans: Sequence[Span]) -> None:
        """Spans that are part of no agent run, passed through unchanged where configured."""
        if not self._pass_all:
            return
        pairs = [(s, s.raw) for s in spans if s.raw is not None]
        if pairs:
            body = encode_request(pairs)
            for endpoint in self._pass_all:
                endpoint.submit_encoded(body, len(pairs))

    def export(self, batch: Batch) -> None:
        for item in batch.runs:
            if item.change == "outcome" or not item.spans:
                continue
            d, previous = item.diagnosis, item.previous
            exported = item.exported if item.exported is not None else set()
            if item.change == "findings":
                only = changed_span_ids(d)
            elif previous is None:
                only = None
            else:
                only = {s.span_id for s in item.spans if s.span_id not in exported}
                if (previous.modes, previous.sources, previous.fatal) != (d.modes, d.sources, d.fatal):
                    only |= changed_span_ids(d)
            pairs = enrich_spans(item.spans, d, only)
            if not pairs:
                continue
            exported.update(s.span_id for s, _ in pairs)
            body = encode_request(pairs)
            for endpoint in self.endpoints:
                endpoint.submit_encoded(body, len(pairs))
