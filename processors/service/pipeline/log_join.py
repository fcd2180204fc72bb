"""GenAI log records joined to their spans, whichever arrives first.

A record names its span by trace and span id. When that span is already buffered (its run not
diagnosed yet) the record's content is added to it at once (``add_event_content``). When it is
not here yet the record is held, by trace and span, charged to the memory account, and the
span's decode adds its content once the span is normalized (``DecodeOptions.pending_events``: the
decoder looks the span up in :attr:`LogJoin.pending`, one dict test per span while nothing is
held for its trace). The ingest stage then takes what the decode read out of the holding and
adds any record that came in between.

A held record is dropped and counted when its span cannot come any more: its run was diagnosed
without it (``span_never_came``, at the run's grace or idle timeout), or no span of its trace
came within ``idle_timeout_seconds``. A record for a run already diagnosed is dropped
(``run_already_diagnosed``): a diagnosis is not re-run for content alone. All of this runs
under the ingest stage's lock, except the decoder's look-up, which only reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from mast_otel.processors.ingest.log_records import LogEvent
from mast_otel.processors.ingest.normalize.events import Event, add_event_content
from mast_otel.processors.ingest.normalize_failure import normalize_failure
from mast_otel.processors.model import Span

NOT_GENAI = "not_genai"
NO_SPAN_ID = "no_span_id"
SPAN_NEVER_CAME = "span_never_came"
RUN_ALREADY_DIAGNOSED = "run_already_diagnosed"
OVER_BUDGET = "over_budget"
INVALID = "invalid"  # over the decode bounds (the partial-success answer names the bound)
NORMALIZE_FAILED = "normalize_failed"  # reading its content into the span raised: a fault of ours, logged


@dataclass(slots=True)
class Held:
    """The records held for one trace's spans not here yet."""

    first_seen: float
    by_span: dict[str, list[Event]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)  # bytes held per span id
    nbytes: int = 0
    records: int = 0


@dataclass(slots=True)
class Outcome:
    """What one request's records (or one sweep) did: counts by fate."""

    joined: int = 0
    held: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    holding: set[str] = field(default_factory=set)  # traces whose records this request left held or joined to a run in flight

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + n


class LogJoin:
    """The records held for spans not here yet (``pending``: trace -> span -> events, read by the decoder)."""

    def __init__(self, content_chars: int, max_bytes_per_trace: int) -> None:
        self.content_chars = content_chars
        self.max_bytes_per_trace = max_bytes_per_trace
        self.pending: dict[str, dict[str, list[Event]]] = {}
        self._held: dict[str, Held] = {}
        self.held_bytes = 0

    def hold(self, record: LogEvent, now: float, room: int, outcome: Outcome) -> None:
        """Keep ``record`` for its span, within ``room`` bytes of the memory account and the trace's cap."""
        held = self._held.get(record.trace_id)
        if record.size > room or (held is not None and held.nbytes + record.size > self.max_bytes_per_trace):
            outcome.drop(OVER_BUDGET)
            return
        if held is None:
            held = self._held[record.trace_id] = Held(now)
            self.pending[record.trace_id] = held.by_span
        held.by_span.setdefault(record.span_id, []).append(record.event)
        held.sizes[record.span_id] = held.sizes.get(record.span_id, 0) + record.size
        held.nbytes += record.size
        held.records += 1
        self.held_bytes += record.size
        outcome.held += 1
        outcome.holding.add(record.trace_id)

    def apply(self, span: Span, events: Sequence[Event]) -> bool:
        """Add records that came after ``span`` was decoded to it; ``False`` when reading their
        content raised (a fault of ours, logged): the records are dropped, the span and the rest
        of the request kept."""
        try:
            add_event_content(span, events, self.content_chars)
        except Exception as exc:
            normalize_failure(exc)
            return False
        return True

    def take(self, trace_id: str, span_id: str) -> tuple[list[Event], int]:
        """The records held for one span, no longer held, and the bytes they held."""
        held = self._held.get(trace_id)
        if held is None:
            return [], 0
        events = held.by_span.pop(span_id, None)
        if events is None:
            return [], 0
        size = held.sizes.pop(span_id, 0)
        held.nbytes -= size
        held.records -= len(events)
        self.held_bytes -= size
        if not held.by_span:
            self._forget(trace_id)
        return events, size

    def holds(self, trace_id: str) -> bool:
        return trace_id in self._held

    def drop_trace(self, trace_id: str) -> int:
        """Let go of every record held for a trace whose spans will not come; how many."""
        held = self._held.get(trace_id)
        if held is None:
            return 0
        self._forget(trace_id)
        return held.records

    def take_trace(self, trace_id: str) -> dict[str, list[Event]]:
        """Every record held for a trace, by span id, no longer held."""
        held = self._held.get(trace_id)
        if held is None:
            return {}
        self._forget(trace_id)
        return held.by_span

    def stale(self, now: float, idle_seconds: float, in_flight: set[str] | dict) -> list[str]:
        """Traces whose records were held ``idle_seconds`` while no span of the trace is buffered."""
        return [t for t, held in self._held.items() if t not in in_flight and now - held.first_seen >= idle_seconds]

    def _forget(self, trace_id: str) -> None:
        held = self._held.pop(trace_id)
        self.pending.pop(trace_id, None)
        self.held_bytes -= held.nbytes
