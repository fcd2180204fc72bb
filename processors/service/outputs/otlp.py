"""OTLP re-export of enriched spans to any number of endpoints.

The enrichment (which spans, with which attributes) is computed once per run and the encoded
request is queued on every endpoint; each endpoint has its own queue, thread and retries, so a
slow or dead backend never holds back another.
"""

from __future__ import annotations

from typing import Sequence

from mast_otel.processors.ingest.decode import WireSpan
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.outputs.otlp_reexport import OTLPReexporter, changed_span_ids, encode_request, enrich_spans
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

    def forward(self, spans: Sequence[WireSpan]) -> None:
        """Spans that are part of no agent run, passed through unchanged where configured."""
        if not self._pass_all or not spans:
            return
        body = encode_request((w.origin, w.raw) for w in spans)
        for endpoint in self._pass_all:
            endpoint.submit_encoded(body, len(spans))

    def export(self, batch: Batch) -> None:
        for item in batch.runs:
            if item.change == "outcome" or not item.wire:
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
            enriched = enrich_spans(item.spans, item.wire, d, only)
            if not enriched:
                continue
            exported.update(span_id for span_id, _, _ in enriched)
            body = encode_request((origin, raw) for _, origin, raw in enriched)
            for endpoint in self.endpoints:
                endpoint.submit_encoded(body, len(enriched))
