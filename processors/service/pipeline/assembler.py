"""Streaming trace assembly: per-trace buffers, completion, bounded memory, late spans.

Spans arrive as their operations end, children before parents, batched by the exporters.
A trace is buffered once it has an agent-related span (agent, model or tool call); other
spans only mark ids (deduplication) and whether the trace root was seen, and are handed back
for pass-through re-export.

Completion:

- ``root_ended``: an agent span or the trace's parentless root span arrived and
  ``grace_seconds`` passed without a new span of that trace. An agent span with a parent we
  have not seen is taken for the run's root, unless the trace is a team's (agent spans of two
  names, or a handoff tool): a sub-agent finishing does not end its team, so such a run waits
  ``team_grace_seconds`` of quiet, or its parentless root and ``grace_seconds``. (A sub-agent
  taken for the root all the same makes the spans that follow late spans, and the run is
  re-diagnosed.)
- ``abandoned``: no span for ``idle_timeout_seconds`` and the root never arrived (the agent
  process stopped or lost its spans). The run is diagnosed on what arrived; a missing end is
  no evidence of a failure mode by itself.
- ``evicted``: memory caps (see ``eviction_policy``) or the write-ahead log's size forced an
  early diagnosis.
- ``shutdown``: the processor flushed the trace while stopping.

Completed runs are retained for ``retention_seconds`` so late spans revive them for a
re-diagnosis, within what the memory budget leaves (they give way first); after that, their ids are remembered (bounded) so late spans are dropped and
counted instead of starting a bogus new run.

Not thread-safe: the pipeline serializes calls. ``now`` is a monotonic clock reading.
"""

from __future__ import annotations

import sys
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Callable, Protocol, Sequence

from mast_otel.processors.config import AssemblyConfig
from mast_otel.processors.ingest.decode import WireSpan
from mast_otel.processors.model import (AGENT, ARRIVED_HINTS_BYTES, ARRIVED_STATE_BYTES, LLM, OTHER, TOOL, ArrivedState,
                                        Finding, Run, Span, arrived_state, arrived_states, as_arrived)
from mast_otel.processors.service.memory.account import held_bytes
from mast_otel.processors.team import is_handoff

_sizeof = sys.getsizeof


class LiveObserver(Protocol):
    """What the assembler feeds each span of a trace while it streams in (``detectors.LiveDetection``)."""

    def observe(self, span: Span) -> list[Finding]: ...

# The default of assembly.span_overhead_bytes (see config.py).
SPAN_OVERHEAD_BYTES = AssemblyConfig.model_fields["span_overhead_bytes"].default
# What one remembered parent link (a span id and its parent's in a dict) holds in memory.
LINK_BYTES = 200
# What one remembered id of a span the run does not keep (deduplication) holds in a set.
ID_BYTES = 120
# Parent links of spans that arrived before any agent-related span of their trace, kept at most
# (oldest traces' first), and never more than a sixteenth of the memory budget: a parent usually
# ends, and is exported, after its children, but not always.
EARLY_LINKS_CAP = 50_000

# A span's strings besides its ids (those are part of the fixed overhead); any of them may be
# long (attribute strings are kept up to receiver.decode.max_string_chars).
_TEXTS = attrgetter("name", "status_message", "error_type", "service_name", "agent_name", "conversation_id", "model",
                    "request_model", "provider", "tool_name", "tool_kind", "tool_description", "tool_call_id",
                    "args_hash", "result_hash", "input_text", "output_text", "tool_args", "tool_result")
# ... and its containers (empty or unset on most spans: model calls' finish reasons, agent spans' hints).
_CONTAINERS = attrgetter("finish_reasons", "requested_tools", "tool_exchanges", "hints", "derived", "guard_interventions")
# A span received in up to this many bytes holds strings of as many characters at most: it is
# charged its serialized size; a longer one (or one of unknown size) has its strings counted,
# each by length, exactly (by sys.getsizeof: a string holding a character past U+00FF costs two
# or four bytes per character) once they pass this many characters in all.
_SHORT_SPAN = 4096


def span_bytes(span: Span, overhead: int = SPAN_OVERHEAD_BYTES, wire: WireSpan | None = None) -> int:
    """Memory held by one buffered span: the fixed part, every string it carries, what its
    containers hold, and its wire bytes when kept for re-export. Runs once per span: the
    usual span, received small, is charged its serialized size without reading its strings."""
    size = overhead if wire is None else overhead + len(wire.raw)
    received = span.wire_bytes
    if 0 < received <= _SHORT_SPAN:
        return size + received
    texts = _TEXTS(span)
    held = sum(map(len, filter(None, texts)))
    if held > _SHORT_SPAN:
        held = sum(map(_sizeof, filter(None, texts)))
    containers = _CONTAINERS(span)
    if any(containers):
        held += sum(map(held_bytes, containers))
    return size + max(held, received)


def run_bytes(run: Run) -> int:
    """Memory held by a run's spans (a queued judge job's share of the account)."""
    return sum(span_bytes(span) for span in run.spans)


@dataclass(slots=True)
class Retained:
    """A diagnosed run kept for late spans, re-diagnosis and the judge."""

    spans: list[Span]
    nbytes: int
    expires_at: float
    root_end_ns: int | None
    completion: str
    exported: set[str] = field(default_factory=set)  # span ids already re-exported
    wire: dict[str, WireSpan] = field(default_factory=dict)  # span id -> wire form, for re-export
    links: dict[str, str | None] = field(default_factory=dict)  # parents of spans not kept, for late spans
    root_parentless: bool = False  # the trace's own root had arrived: revived, the run waits ``grace_seconds`` only
    # what its diagnosis changes on each span, as it arrived (by position; None: never diagnosed
    # here, e.g. read back from the log), and the memory that holds (in ``nbytes``)
    arrived: list[ArrivedState] | None = None
    arrived_bytes: int = 0


@dataclass(slots=True)
class TraceBuffer:
    trace_id: str
    first_seen: float
    last_seen: float
    spans: list[Span] = field(default_factory=list)
    span_ids: set[str] = field(default_factory=set)
    wire: dict[str, WireSpan] = field(default_factory=dict)  # span id -> wire form (re-export on)
    links: dict[str, str | None] = field(default_factory=dict)  # parents of the trace's spans not kept
    nbytes: int = 0
    root_ended: bool = False
    root_end_ns: int | None = None
    root_parentless: bool = False  # the trace's own root arrived (else root_ended rests on an agent span with a parent)
    team: bool = False  # spans of two agents or a handoff arrived: an agent span ending may be a sub-agent's
    first_agent: str | None = None
    live: LiveObserver | None = None  # the trace's live detection, when it is on
    live_findings: list[Finding] = field(default_factory=list)
    # live findings raised before any span named the run's agent: counted once one does, or at
    # diagnosis under the diagnosis's labels, so no live count says agent "unknown" for a run
    # whose other metrics name its agent
    unlabelled_live: list[Finding] = field(default_factory=list)
    previous: Retained | None = None  # set when late spans revived a diagnosed run
    late_spans: int = 0
    service_name: str | None = None
    agent: str | None = None
    model: str | None = None

    def run(self, completion: str) -> Run:
        return Run.from_spans(self.trace_id, self.spans, completion=completion, links=self.links)


def _note_team(buf: TraceBuffer, span: Span, role: object) -> None:
    """Mark the trace a team's once it shows a second agent or a handoff (see ``TraceBuffer.team``)."""
    if role is AGENT:
        name = span.agent_name or span.name
        if buf.first_agent is None:
            buf.first_agent = name
        elif name != buf.first_agent:
            buf.team = True
    elif role is TOOL and is_handoff(span):
        buf.team = True


@dataclass(slots=True)
class Completed:
    buffer: TraceBuffer
    completion: str
    retained: Retained | None = None  # where late spans will find the run (None: retention off)
    evicted_reason: str | None = None  # max_traces_in_flight | max_buffered_bytes | wal_max_bytes
    through: int = 0  # the assembler's ``position`` when the run completed: its spans logged up to there


@dataclass(slots=True)
class LiveHit:
    """A finding raised live, with the run labels known at that moment."""

    finding: Finding
    service_name: str | None
    agent: str | None
    model: str | None


@dataclass(slots=True)
class AddReport:
    """What one batch of spans did to the buffers (the pipeline turns it into metrics)."""

    accepted: int = 0
    duplicates: int = 0
    dropped: Counter = field(default_factory=Counter)  # reason -> spans
    late_rediagnosed: int = 0
    late_dropped: int = 0
    live: list[LiveHit] = field(default_factory=list)
    passthrough: list[WireSpan] = field(default_factory=list)  # wire forms of spans no run holds (re-export on)
    evicted: int = 0  # traces evicted by this batch (diagnosed on the next sweep)
    opened: list[str] = field(default_factory=list)  # trace ids that got a buffer in this batch


class Assembler:
    """Groups spans into runs and decides when each run is complete."""

    def __init__(
        self,
        config: AssemblyConfig,
        live_detection: Callable[[], LiveObserver] | None = None,
        on_live_error: Callable[[BaseException], None] | None = None,
        on_forget: Callable[[str], None] | None = None,
        held_elsewhere: Callable[[], int] | None = None,
    ) -> None:
        self.config = config
        # what the rest of the memory account holds (queues, request bodies): retained runs and,
        # under lasting pressure, buffered runs make room for it
        self._held_elsewhere = held_elsewhere or (lambda: 0)
        self._live_factory = live_detection
        self._on_live_error = on_live_error
        self._on_forget = on_forget  # a diagnosed run is no longer retained: late spans for it are dropped
        # the write-ahead log position of the last record added (0: no log), stamped on completed runs
        self.position = 0
        self.replaying = False  # retained runs are not forgotten for the caps while the log is read back
        self.in_flight: OrderedDict[str, TraceBuffer] = OrderedDict()  # least recently active first
        self._ended: set[str] = set()
        self.retained: OrderedDict[str, Retained] = OrderedDict()  # oldest first
        self.retained_bytes = 0
        self._tombstones: OrderedDict[str, None] = OrderedDict()
        # parentless roots that ended before any agent-related span of their trace arrived
        # (an application span around the agent, from another tracer): trace id -> end time
        self._early_roots: OrderedDict[str, int] = OrderedDict()
        self._early_links: OrderedDict[str, dict[str, str]] = OrderedDict()  # trace id -> span id -> parent
        self._early_link_count = 0
        self._early_links_cap = max(1, min(EARLY_LINKS_CAP, config.max_buffered_bytes // (16 * LINK_BYTES)))
        self._evicted: list[Completed] = []
        self.buffered_bytes = 0
        self._over_since: float | None = None  # when buffered bytes last went over budget

    # --- ingest -------------------------------------------------------------------------------
    def evicted_at(self, position: int) -> set[str]:
        """Runs evicted at ``position`` or later (their diagnosis includes that record's spans)
        and not yet handed out by ``due``; a run evicted before it that a span of it did not
        revive dropped that span."""
        return {c.buffer.trace_id for c in self._evicted if c.through >= position} if self._evicted else set()

    def unknown(self, spans: Sequence[Span]) -> set[str]:
        """Trace ids of agent-related ``spans`` this assembler holds nothing about (not buffered,
        retained or remembered as diagnosed). Safe to call without the pipeline's lock: a stale
        answer only costs a needless look-up."""
        ids = {s.trace_id for s in spans if s.role is not OTHER}
        return {t for t in ids if t not in self.in_flight and t not in self.retained and t not in self._tombstones}

    def diagnosed(self, trace_id: str) -> bool:
        """Whether the run was diagnosed here and is not buffered again (retained, or remembered)."""
        return trace_id not in self.in_flight and (trace_id in self.retained or trace_id in self._tombstones)

    def mark_diagnosed(self, trace_ids: Sequence[str] | set[str]) -> None:
        """Runs diagnosed elsewhere (before a restart): their spans are dropped as late ones."""
        for trace_id in trace_ids:
            if trace_id not in self.in_flight and trace_id not in self.retained:
                self._tombstone(trace_id)

    @property
    def held_bytes(self) -> int:
        """What the buffers and the retained runs hold (their share of the memory account)."""
        return self.buffered_bytes + self.retained_bytes

    def shed_retained(self, nbytes: int) -> int:
        """Forget the oldest retained runs until ``nbytes`` are freed (or none is left); what was freed.
        Retained runs give way first: they only serve late spans."""
        freed = 0
        while self.retained and freed < nbytes:
            trace_id = next(iter(self.retained))
            freed += self.retained[trace_id].nbytes
            self._forget(trace_id)
        return freed

    def add(self, spans: Sequence[Span], now: float, wire: Sequence[WireSpan] = ()) -> AddReport:
        """Buffer ``spans``; ``wire`` is their wire forms by position (empty: re-export off).

        Runs once per span: roles are compared with the module constants (``Role.X`` is an enum
        lookup costing more than the comparison), the span's role read once."""
        report = AddReport()
        cfg = self.config
        in_flight = self.in_flight
        max_spans, max_bytes, overhead = cfg.max_spans_per_trace, cfg.max_bytes_per_trace, cfg.span_overhead_bytes
        max_ids = 2 * max_spans  # ids remembered per trace: its spans and as many others
        for i, span in enumerate(spans):
            kept = wire[i] if wire else None
            trace_id, role = span.trace_id, span.role
            buf = in_flight.get(trace_id)
            if buf is None:
                if role is OTHER:  # never opens a buffer: nothing to diagnose
                    if span.parent_span_id is None:
                        self._remember_root(trace_id, span.end_ns)
                    else:
                        self._remember_link(trace_id, span.span_id, span.parent_span_id)
                    if kept is not None:
                        report.passthrough.append(kept)
                    report.accepted += 1
                    continue
                buf = self._open(trace_id, now, report)
                if buf is None:
                    report.late_dropped += 1
                    continue
            if span.span_id in buf.span_ids:
                report.duplicates += 1
                continue
            if role is OTHER and len(buf.span_ids) >= max_ids and span.parent_span_id is not None:
                # past the span cap the trace's other spans are passed on unremembered (a retry
                # of one is accepted twice, which costs nothing but the pass-through)
                if kept is not None:
                    report.passthrough.append(kept)
                report.accepted += 1
                continue
            buf.span_ids.add(span.span_id)  # a retry of a dropped span is a duplicate too
            buf.last_seen = now
            in_flight.move_to_end(trace_id)
            if span.parent_span_id is None or role is AGENT:
                if not buf.root_ended:
                    buf.root_ended = True
                    self._ended.add(trace_id)
                if role is AGENT or buf.root_end_ns is None:
                    buf.root_end_ns = max(buf.root_end_ns or 0, span.end_ns)
                if span.parent_span_id is None:
                    buf.root_parentless = True
            if not buf.team and not buf.root_parentless and (role is AGENT or role is TOOL):
                _note_team(buf, span, role)
            if role is OTHER:
                if kept is not None:
                    report.passthrough.append(kept)
                report.accepted += 1
                held = ID_BYTES
                if span.parent_span_id is not None:  # how the steps below it reach their agent
                    buf.links[span.span_id] = span.parent_span_id
                    held += LINK_BYTES
                buf.nbytes += held
                self.buffered_bytes += held
                continue
            # Agent spans are exempt from the span cap: a runaway loop keeps its root and hints.
            if len(buf.spans) >= max_spans and role is not AGENT:
                report.dropped["trace_span_limit"] += 1
                continue
            size = span_bytes(span, overhead, kept)
            if buf.nbytes + size > max_bytes:
                report.dropped["trace_byte_limit"] += 1
                continue
            report.accepted += 1
            if buf.previous is not None:
                buf.late_spans += 1
                report.late_rediagnosed += 1
            buf.spans.append(span)
            if kept is not None:
                buf.wire[span.span_id] = kept
            buf.nbytes += size
            self.buffered_bytes += size
            # (most spans of a trace change no label: asked here first, without the call)
            if span.agent_name or not buf.service_name or (role is LLM and not buf.model):
                self._label(buf, span)
                if buf.unlabelled_live and buf.agent:
                    report.live.extend(LiveHit(f, buf.service_name, buf.agent, buf.model) for f in buf.unlabelled_live)
                    buf.unlabelled_live.clear()
            live = buf.live
            if live is not None:
                try:
                    found = live.observe(span)
                except Exception as exc:  # a detector bug must never break ingest
                    self._live_failed(buf, exc)
                    continue
                if found:
                    self._live_found(buf, found, report)
        self._enforce_limits(report)
        return report

    def _open(self, trace_id: str, now: float, report: AddReport) -> TraceBuffer | None:
        """A new buffer, a revived retained run, or ``None`` for a run past retention."""
        if trace_id in self._tombstones:
            return None
        previous = self.retained.get(trace_id)
        if previous is not None and previous.expires_at <= now:
            # past retention whether or not a sweep has forgotten it yet: the rule is the span's
            # arrival against the run's expiry, never the sweeper's timing
            self._forget(trace_id)
            return None
        buf = TraceBuffer(trace_id, first_seen=now, last_seen=now)
        previous = self.retained.pop(trace_id, None)
        if previous is not None:
            self.retained_bytes -= previous.nbytes
            buf.previous = previous
            buf.spans = (list(previous.spans) if previous.arrived is None
                         else list(map(as_arrived, previous.spans, previous.arrived)))
            buf.wire = dict(previous.wire)
            buf.links = dict(previous.links)  # a late span's parent may be a span that came before
            buf.span_ids = {s.span_id for s in previous.spans}
            buf.nbytes = previous.nbytes - previous.arrived_bytes
            buf.root_end_ns = previous.root_end_ns
            buf.root_ended, buf.root_parentless = True, previous.root_parentless
            self._ended.add(trace_id)
            self.buffered_bytes += buf.nbytes
            for s in buf.spans:
                self._label(buf, s)
                if not buf.team and (s.role is AGENT or s.role is TOOL):
                    _note_team(buf, s, s.role)
        elif self._live_factory is not None:
            buf.live = self._live_factory()
        links = self._early_links.pop(trace_id, None)
        if links:
            self._early_link_count -= len(links)
            buf.links.update(links)
            buf.nbytes += LINK_BYTES * len(links)  # already charged to buffered_bytes
        early_root_end = self._early_roots.pop(trace_id, None)
        if early_root_end is not None:
            buf.root_ended, buf.root_end_ns, buf.root_parentless = True, early_root_end, True
            self._ended.add(trace_id)
        self.in_flight[trace_id] = buf
        report.opened.append(trace_id)
        return buf

    def _remember_link(self, trace_id: str, span_id: str, parent: str) -> None:
        """A parent link that arrived before its trace's first agent-related span (bounded, charged)."""
        self._early_links.setdefault(trace_id, {})[span_id] = parent
        self._early_links.move_to_end(trace_id)
        self._early_link_count += 1
        self.buffered_bytes += LINK_BYTES
        while self._early_link_count > self._early_links_cap:
            _, dropped = self._early_links.popitem(last=False)
            self._early_link_count -= len(dropped)
            self.buffered_bytes -= LINK_BYTES * len(dropped)

    def _remember_root(self, trace_id: str, end_ns: int) -> None:
        """So a run completes whatever order its root and its agent spans arrive in (bounded)."""
        self._early_roots[trace_id] = end_ns
        self._early_roots.move_to_end(trace_id)
        if len(self._early_roots) > self.config.max_traces_in_flight:
            self._early_roots.popitem(last=False)

    @staticmethod
    def _label(buf: TraceBuffer, span: Span) -> None:
        """The labels live detections are counted under: the first agent name any span gives
        (steps name their enclosing agent), replaced by the root agent's once it arrives."""
        if span.service_name and not buf.service_name:
            buf.service_name = span.service_name
        if span.agent_name and (not buf.agent or (span.role is AGENT and span.parent_span_id is None)):
            buf.agent = span.agent_name
        if span.role is LLM and span.model and not buf.model:
            buf.model = span.model

    def _live_failed(self, buf: TraceBuffer, exc: Exception) -> None:
        """Live detection stops for this trace (its final diagnosis still runs)."""
        buf.live = None
        if self._on_live_error:
            self._on_live_error(exc)

    @staticmethod
    def _live_found(buf: TraceBuffer, found: list[Finding], report: AddReport) -> None:
        for finding in found:
            buf.live_findings.append(finding)
            if buf.agent is None:  # no span named the agent yet (steps that do not name it): counted later
                buf.unlabelled_live.append(finding)
            else:
                report.live.append(LiveHit(finding, buf.service_name, buf.agent, buf.model))

    # --- memory limits ------------------------------------------------------------------------
    def _enforce_limits(self, report: AddReport) -> None:
        cfg = self.config
        hard_limit = cfg.max_buffered_bytes * cfg.hard_limit_factor
        while self.in_flight and (len(self.in_flight) > cfg.max_traces_in_flight or self.buffered_bytes > hard_limit):
            reason = "max_traces_in_flight" if len(self.in_flight) > cfg.max_traces_in_flight else "max_buffered_bytes"
            self._evict(reason)
            report.evicted += 1

    def _evict(self, reason: str, trace_id: str | None = None) -> None:
        completed = self._complete(trace_id or self._victim(), "evicted")
        completed.evicted_reason = reason
        self._evicted.append(completed)

    def evict(self, trace_ids: Sequence[str], reason: str) -> int:
        """Diagnose these runs early (those still buffered; on the next ``due``); how many."""
        buffered = [t for t in trace_ids if t in self.in_flight]
        for trace_id in buffered:
            self._evict(reason, trace_id)
        return len(buffered)

    def _relieve_pressure(self, now: float) -> None:
        """Evict down to ``eviction_target`` of the budget once it has been exceeded for ``pressure_eviction_seconds``.

        Refusing input (429) alone could wait forever: the spans that would complete the
        buffered runs are among those refused.
        """
        budget = self.config.max_buffered_bytes
        others = self._held_elsewhere()
        if self.held_bytes + others < budget:
            self._over_since = None
            return
        if self._over_since is None:
            self._over_since = now
        if now - self._over_since < self.config.pressure_eviction_seconds:
            return
        target = budget * self.config.eviction_target
        self.shed_retained(int(self.held_bytes + others - target))  # retained runs give way first
        while self.in_flight and self.buffered_bytes + others > target:
            self._evict("max_buffered_bytes")
        self._over_since = None

    def _victim(self) -> str:
        if self.config.eviction_policy == "largest_first":
            return max(self.in_flight.values(), key=lambda b: b.nbytes).trace_id
        return next(iter(self.in_flight))  # oldest_first: least recently active

    def _close(self, trace_id: str) -> TraceBuffer:
        buf = self.in_flight.pop(trace_id)
        self._ended.discard(trace_id)
        self.buffered_bytes -= buf.nbytes
        return buf

    def _complete(self, trace_id: str, completion: str | None = None, now: float | None = None) -> Completed:
        """Take a run out of the buffers and retain it at once, so late spans find it even
        while it is being diagnosed. ``completion=None`` derives it from whether the root ended."""
        buf = self._close(trace_id)
        if completion is None:
            completion = "root_ended" if buf.root_ended else "abandoned"
        retained = self._retain(buf, completion, buf.last_seen if now is None else now)
        return Completed(buf, completion, retained, through=self.position)

    # --- completion ---------------------------------------------------------------------------
    def due(self, now: float) -> list[Completed]:
        """Runs complete at ``now`` (plus any evicted since the last call), removed from the buffers."""
        self._relieve_pressure(now)
        done, self._evicted = self._evicted, []
        grace, team_grace = self.config.grace_seconds, self.config.team_grace_seconds
        for trace_id in [t for t in self._ended if now - (b := self.in_flight[t]).last_seen
                         >= (team_grace if b.team and not b.root_parentless else grace)]:
            done.append(self._complete(trace_id, now=now))
        idle = self.config.idle_timeout_seconds
        while self.in_flight:
            buf = next(iter(self.in_flight.values()))
            if now - buf.last_seen < idle:
                break
            done.append(self._complete(buf.trace_id, now=now))
        self.expire(now)
        return done

    def drain(self, now: float) -> list[Completed]:
        """Every buffered run, for a flush at shutdown."""
        done, self._evicted = self._evicted, []
        for trace_id in list(self.in_flight):
            done.append(self._complete(trace_id, None if self.in_flight[trace_id].root_ended else "shutdown", now))
        return done

    def _retain(self, buf: TraceBuffer, completion: str, now: float) -> Retained | None:
        """Keep a completed run for late spans (or just remember its id when retention is off)."""
        if self.config.retention_seconds <= 0:
            self._tombstone(buf.trace_id)
            return None
        prior = buf.previous.exported if buf.previous is not None else set()
        arrived, hinted = arrived_states(buf.spans)  # before the diagnosis changes the spans
        held = ARRIVED_STATE_BYTES * len(arrived) + ARRIVED_HINTS_BYTES * hinted
        kept = Retained(buf.spans, buf.nbytes + held, now + self.config.retention_seconds, buf.root_end_ns, completion,
                        prior, buf.wire, buf.links, buf.root_parentless, arrived, held)
        self.retained[buf.trace_id] = kept
        self.retained_bytes += kept.nbytes
        self.limit_retained()
        return kept

    def expire(self, now: float) -> None:
        """Forget the retained runs whose retention ended by ``now`` (oldest first)."""
        while self.retained:
            trace_id, kept = next(iter(self.retained.items()))
            if kept.expires_at > now:
                break
            self._forget(trace_id)

    def _forget(self, trace_id: str) -> None:
        kept = self.retained.pop(trace_id)
        self.retained_bytes -= kept.nbytes
        self._tombstone(trace_id)

    def restore(self, spans: Sequence[Span], now: float, wire: Sequence[WireSpan] = ()) -> None:
        """Spans read back from the write-ahead log that a diagnosis before a restart included:
        their runs are retained as diagnosed and re-exported then (not diagnosed again, not
        buffered), so late spans revive them with every span. ``now`` is when they were received."""
        cfg = self.config
        if cfg.retention_seconds <= 0:
            return
        for i, span in enumerate(spans):
            kept = self.retained.get(span.trace_id)
            if kept is None:
                if span.trace_id in self._tombstones:
                    continue
                kept = self.retained[span.trace_id] = Retained([], 0, now, None, "abandoned")
            kept.expires_at = max(kept.expires_at, now + cfg.retention_seconds)
            if span.role is OTHER:
                if span.parent_span_id is not None:
                    kept.links[span.span_id] = span.parent_span_id
                else:
                    kept.root_parentless = True
                continue
            if span.span_id in kept.exported:  # a request logged twice (a retry)
                continue
            kept.exported.add(span.span_id)
            kept.spans.append(span)
            if wire:
                kept.wire[span.span_id] = wire[i]
            size = span_bytes(span, cfg.span_overhead_bytes, wire[i] if wire else None)
            if kept.arrived is not None:  # read back beside spans diagnosed here: its state is charged too
                kept.arrived.append(arrived_state(span))
                held = ARRIVED_STATE_BYTES + (ARRIVED_HINTS_BYTES if span.hints is not None else 0)
                kept.arrived_bytes += held
                size += held
            kept.nbytes += size
            self.retained_bytes += size
            if span.parent_span_id is None or span.role is AGENT:
                kept.root_end_ns, kept.completion = max(kept.root_end_ns or 0, span.end_ns), "root_ended"
                kept.root_parentless = kept.root_parentless or span.parent_span_id is None

    def limit_retained(self) -> None:
        """Forget the oldest retained runs past the caps (``restore`` leaves that to the end of a
        replay, so the late spans it reads back find every run retained before the restart)."""
        cfg = self.config
        if self.replaying:
            return
        # retained runs share the budget with everything else
        room = cfg.max_buffered_bytes * cfg.eviction_target - self.buffered_bytes - self._held_elsewhere()
        while self.retained and (len(self.retained) > cfg.max_traces_in_flight or self.retained_bytes > room):
            self._forget(next(iter(self.retained)))

    def _tombstone(self, trace_id: str) -> None:
        if self._on_forget is not None:
            self._on_forget(trace_id)
        self._tombstones[trace_id] = None
        self._tombstones.move_to_end(trace_id)
        if len(self._tombstones) > self.config.max_traces_in_flight * 4:
            self._tombstones.popitem(last=False)
