"""The OTLP partial-success answer: every span of the request that was not kept, whatever dropped it.

The decoder rejects malformed or oversized spans; the assembler drops spans beyond a trace's
caps and late spans of runs past retention. The sender is told the sum, with each reason,
so ``rejected_spans`` always equals what the server's own counters
(``mast_spans_rejected_total`` and ``mast_late_spans_total{reason="dropped"}``) went up by.
"""

from __future__ import annotations

from typing import Mapping

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from mast_otel.processors.config import AssemblyConfig

LATE_DROPPED = "late_span_past_retention"


def drop_details(assembly: AssemblyConfig) -> dict[str, str]:
    """What each server-side drop reason means, in the words the sender reads."""
    return {
        "trace_span_limit": f"spans beyond assembly.max_spans_per_trace ({assembly.max_spans_per_trace}) of one trace were dropped",
        "trace_byte_limit": f"spans beyond assembly.max_bytes_per_trace ({assembly.max_bytes_per_trace} bytes) of one trace were dropped",
        LATE_DROPPED: f"spans of runs diagnosed more than assembly.retention_seconds ({assembly.retention_seconds:g}) ago were dropped",
    }


def export_response(decoder_rejected: Mapping[str, int], decoder_messages: list[str], dropped: Mapping[str, int],
                    details: Mapping[str, str]) -> ExportTraceServiceResponse | None:
    """The answer for a request with rejections, or ``None`` when every span was kept."""
    counts = dict(decoder_rejected)
    for reason, n in dropped.items():
        if n:
            counts[reason] = counts.get(reason, 0) + n
    total = sum(counts.values())
    if not total:
        return None
    messages = [*decoder_messages, *(details.get(reason, reason) for reason, n in dropped.items() if n)]
    summary = ", ".join(f"{reason}={n}" for reason, n in sorted(counts.items()))
    response = ExportTraceServiceResponse()
    response.partial_success.rejected_spans = total
    response.partial_success.error_message = f"rejected {total} span(s) ({summary}): {'; '.join(messages)}"
    return response
