"""A run's steps laid out as a timeline, each step carrying the findings it is evidence for.

Rows come from the run's compact step list (``service.steps``), which the store keeps as long
as the diagnosis, so the timeline outlives the spans. Content excerpts are shown only while
the processor still holds the run's spans (and only if content was captured); a call whose
content came from log records (or its span events) says so, since that content was joined to
the call rather than sent on it.

A long run is folded on the page: at most ``web.timeline_rows`` steps are drawn (the steps the
findings point at, then the first and the last), each run of steps left out is one marker
linking to a page of them (``?steps=FIRST-LAST``), and so is each run of steps the stored list
itself folded. Page time and size then stay bounded however long the run was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Mapping, Sequence

from mast_otel.processors import taxonomy
from mast_otel.processors.model import Diagnosis, ModeVerdict, Role, Run, Span
from mast_otel.processors.service.store.run_steps import RunStep, StepFold, fold
from mast_otel.processors.team_view import handoff_edges, step_agents

EXCERPT_CHARS = 160
LABEL_CHARS = 120  # a step's name on the page; longer ones end in "…"
TOOLS_LISTED = 8  # tools a model call asked for, named in its row
EXPLANATION_CHARS = 600  # a finding's explanation on the page
CONTENT_FROM = {"logs": "from log records joined to this call", "events": "from this call's span events"}


@dataclass
class Row:
    """One step on the timeline; ``left``/``width`` are percentages of the run's duration."""

    step: RunStep
    depth: int
    left: float
    width: float
    offset: str  # start, from the run's first step ("+1.2 s")
    duration: str  # "340 ms"
    detail: str
    excerpt: str | None
    verdicts: list[ModeVerdict] = field(default_factory=list)
    content_source: str | None = None  # the held span's ``content_source``
    fold: ClassVar[bool] = False

    @property
    def content_from(self) -> str | None:
        """Where the call's content came from, in words, when not from the span's own attributes."""
        return CONTENT_FROM.get(self.content_source) if self.content_source else None

    @property
    def label(self) -> str:
        return shorter(self.step.label, LABEL_CHARS)


@dataclass(frozen=True)
class Folded:
    """One contiguous stretch of steps the timeline leaves out, drawn as one row: ``count`` steps
    in all, of which ``first``..``last`` (positions from 1 in the stored list, ``None`` when
    there are none) are a page away and ``not_stored`` were not kept by the stored list itself."""

    count: int
    first: int | None = None
    last: int | None = None
    not_stored: int = 0
    fold: ClassVar[bool] = True


def shorter(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters, ending in "…" when cut."""
    return text if len(text) <= chars else text[:chars] + "…"


def _depths(steps: Sequence[RunStep]) -> dict[str, int]:
    """How many agent spans enclose each step (an agent span counts its own enclosing agents)."""
    by_id = {s.span_id: s for s in steps}
    depths: dict[str, int] = {}
    for step in steps:
        chain: dict[str, RunStep] = {}  # up to a step of known depth, the top, or a cycle
        cur: RunStep | None = step
        while cur is not None and cur.span_id not in depths and cur.span_id not in chain:
            chain[cur.span_id] = cur
            cur = by_id.get(cur.parent_span_id or "")
        for item in reversed(chain.values()):  # from the outermost down
            parent = by_id.get(item.parent_span_id or "")
            if parent is not None and parent.span_id in depths:
                depths[item.span_id] = depths[parent.span_id] + (parent.role == Role.AGENT.value)
            else:
                depths[item.span_id] = 0
    return depths


@dataclass
class Lane:
    """One agent of a team run: its model and tool calls on the run's time axis (percentages)."""

    agent: str
    bars: list[Row] = field(default_factory=list)


@dataclass(frozen=True)
class HandoffMark:
    """A handoff drawn on the lanes: where it happens and between which lanes."""

    left: float
    source: int  # lane index
    target: int | None  # lane index, when the receiving agent is known
    span_id: str
    label: str


def team_lanes(rows: Sequence[Row]) -> tuple[list[Lane], list[HandoffMark]]:
    """A team run's steps as one lane per agent and its handoffs between lanes; ``([], [])`` for a
    run of one agent. An agent that only wraps others (owns no model or tool call) gets no lane.
    Agents and handoffs are :mod:`team_view`'s, as ``analyze`` and the API list them."""
    steps = [r.step for r in rows]
    agents = step_agents(steps)
    lanes: dict[str, Lane] = {}
    for row in rows:
        agent = agents.get(row.step.span_id)
        if row.step.role != Role.AGENT.value and agent:
            lanes.setdefault(agent, Lane(agent)).bars.append(row)
    if len(lanes) < 2:
        return [], []
    order = list(lanes)
    left = {r.step.span_id: r.left for r in rows}
    marks = [HandoffMark(left[e.span_id], order.index(e.source), order.index(e.target) if e.target in lanes else None,
                         e.span_id, f"{e.source} → {e.target or '?'}")
             for e in handoff_edges(steps, agents, order) if e.source in lanes]
    return list(lanes.values()), marks


def _detail(step: RunStep) -> str:
    parts: list[str] = []
    if step.role == Role.AGENT.value:
        parts += [f"budget {step.budget} steps" if step.budget else "", ", ".join(step.constraints),
                  f"ended by {step.termination_reason}" if step.termination_reason else ""]
    elif step.role == Role.LLM.value:
        tools = step.requested_tools
        more = f" and {len(tools) - TOOLS_LISTED} more" if len(tools) > TOOLS_LISTED else ""
        parts += [step.model or "", f"{step.input_message_count} messages in" if step.input_message_count is not None else "",
                  f"asked for {', '.join(shorter(t, LABEL_CHARS) for t in tools[:TOOLS_LISTED])}{more}" if tools else "answered"]
    else:
        parts.append(step.tool_kind or "")
        if step.verification_passed is not None:
            parts.append("check passed" if step.verification_passed else "check FAILED")
    if step.error:
        parts.append(f"error {step.error}" if step.error != "error" else "error")
    if step.interventions and step.role == Role.TOOL.value and step.tool_kind and any(
            g[1] == "enforce" and g[2] in ("blocked", "stopped") for g in step.interventions):
        parts.append("not run: a guard refused it")
    return " · ".join(p for p in parts if p)


def _excerpt(span: Span | None) -> str | None:
    if span is None:
        return None
    text = span.tool_result or span.output_text or span.tool_args or (span.hints.final_answer if span.hints else None)
    if not text:
        return None
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "…"


def shown_positions(steps: Sequence[RunStep], limit: int, keep: Sequence[str], asked: tuple[int, int] | None = None) -> list[int]:
    """Which steps (positions from 0) the page draws: ``asked`` (positions from 1, at most ``limit``
    of them), else at most ``limit`` steps, those in ``keep`` first (in its order), then the first and the last."""
    if asked is not None:
        first = max(asked[0], 1) - 1
        return list(range(first, min(asked[1], first + limit, len(steps))))
    kept, _ = fold([(s.span_id, i) for i, s in enumerate(steps)], limit, lambda _: 1, keep)
    return [i for _, i in kept]


def timeline_items(rows: Sequence[Row], positions: Sequence[int], count: int, stored_folds: Sequence[StepFold] = ()) -> list[Row | Folded]:
    """The page's timeline in order: ``rows`` (drawn at ``positions`` of the ``count`` stored steps)
    and one :class:`Folded` row for each stretch of steps between two drawn ones, whether the page
    or the store left them out: a long run with scattered evidence draws its folds as ranges, not
    a row per step."""
    drawn = dict(zip(positions, rows))
    stored = {f.after: f.left_out for f in stored_folds}
    items: list[Row | Folded] = []
    listed: list[int] = []  # positions of the current stretch the page left out
    not_stored = 0  # steps of the current stretch the store left out

    def close() -> None:
        nonlocal not_stored
        if listed or not_stored:
            first, last = (listed[0] + 1, listed[-1] + 1) if listed else (None, None)
            items.append(Folded(len(listed) + not_stored, first, last, not_stored))
            listed.clear()
            not_stored = 0

    for position in range(count + 1):
        not_stored += stored.get(position, 0)
        if position == count:
            break
        if position in drawn:
            close()
            items.append(drawn[position])
        else:
            listed.append(position)
    close()
    return items


def build_rows(steps: Sequence[RunStep], diagnosis: Diagnosis | None, held: Run | None = None,
               positions: Sequence[int] | None = None) -> list[Row]:
    """The steps at ``positions`` (all by default) in start order, with the verdicts each one
    evidences (and excerpts from ``held``); the time axis and depths come from every step."""
    if not steps:
        return []
    start = min(s.start_ns for s in steps)
    total = max(max(s.end_ns for s in steps) - start, 1)
    verdicts = [(v, set(v.evidence_span_ids)) for v in (diagnosis.verdicts if diagnosis else {}).values()]
    spans = {s.span_id: s for s in held.spans} if held is not None else {}
    depths = _depths(steps)
    rows = []
    for step in (steps if positions is None else [steps[i] for i in positions]):
        span = spans.get(step.span_id)
        rows.append(Row(
            step=step, depth=depths[step.span_id], left=round(100 * (step.start_ns - start) / total, 2),
            width=round(max(100 * max(0, step.end_ns - step.start_ns) / total, 0.4), 2),
            offset="+" + duration_text(step.start_ns - start), duration=duration_text(step.end_ns - step.start_ns),
            detail=_detail(step), excerpt=_excerpt(span),
            verdicts=[v for v, evidence in verdicts if step.span_id in evidence],
            content_source=span.content_source if span is not None else None,
        ))
    return rows


def duration_text(ns: int) -> str:
    """A duration for people: "0.4 ms", "340 ms", "1.25 s", "2 min 05 s"."""
    ns = max(ns, 0)
    if ns < 1_000_000:
        return f"{ns / 1e6:.1f} ms"
    if ns < 1_000_000_000:
        return f"{ns / 1e6:.0f} ms"
    if ns < 60_000_000_000:
        return f"{ns / 1e9:.2f} s"
    minutes, seconds = divmod(round(ns / 1e9), 60)
    return f"{minutes} min {seconds:02d} s"


def axis_ticks(steps: Sequence[RunStep], count: int = 4) -> list[tuple[float, str]]:
    """Time-axis marks for the timeline: (percent of the run's duration, time since its start)."""
    if not steps:
        return []
    total = max(max(s.end_ns for s in steps) - min(s.start_ns for s in steps), 1)
    values = [total * i // count for i in range(count + 1)]
    return list(zip((round(100 * i / count, 2) for i in range(count + 1)), axis_labels(values)))


_AXIS_UNITS = ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns"))


def axis_labels(values: Sequence[int]) -> list[str]:
    """Labels for ascending times in nanoseconds, one unit for all (the largest the last fits) and
    as few decimals as keep them apart: a 0.1 ms run reads 0, 25, 50, 75, 100 µs, never
    0.0 ms, 0.0 ms, 0.1 ms."""
    last = values[-1] if values else 0
    if last >= 60_000_000_000:
        return ["{} min {:02d} s".format(*divmod(round(v / 1e9), 60)) for v in values]  # ticks 15 s or more apart
    scale, unit = next(((scale, unit) for scale, unit in _AXIS_UNITS if last >= scale), _AXIS_UNITS[-1])
    for decimals in range(4):
        labels = [f"{v / scale:.{decimals}f} {unit}" for v in values]
        if len(set(labels)) == len(labels):
            break
    return labels


@dataclass(frozen=True)
class _Counted:
    """The parts of a step :class:`IterationCounter` reads."""

    span_id: str
    step_index: int | None
    role: Role


def step_counts(steps: Sequence[RunStep]) -> tuple[int, int]:
    """(steps, model and tool calls): steps counted as the run-wide step limit counts them (a
    model call and the tool calls it led to are one step; ``mast.step.index`` groups where present)."""
    from mast_otel.processors.detectors.context import IterationCounter

    counter = IterationCounter()
    calls = 0
    for step in sorted(steps, key=lambda s: (s.start_ns, s.step_index if s.step_index is not None else -1)):
        if step.role != Role.AGENT.value:
            calls += 1
            counter.add(_Counted(step.span_id, step.step_index, Role(step.role)))  # type: ignore[arg-type]
    return len(counter), calls


def mode_label(mode: str) -> str:
    try:
        return f"{mode} {taxonomy.get(mode).name}"
    except KeyError:
        return mode


def mode_severity(mode: str, overrides: Mapping[str, str] | None = None) -> taxonomy.Severity:
    try:
        return taxonomy.severity(mode, overrides)
    except KeyError:
        return "unrated"
