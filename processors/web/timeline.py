"""A run's steps laid out as a timeline, each step carrying the findings it is evidence for."""

from __future__ import annotations

from dataclasses import dataclass, field

from mast_otel.processors import registry
from mast_otel.processors.model import Diagnosis, ModeVerdict, Role, Run, Span

EXCERPT_CHARS = 160


@dataclass
class Row:
    """One span on the timeline; ``left``/``width`` are percentages of the run's duration."""

    span: Span
    depth: int
    left: float
    width: float
    detail: str
    excerpt: str | None
    verdicts: list[ModeVerdict] = field(default_factory=list)


def _depth(run: Run, span: Span) -> int:
    """How many agent spans enclose ``span`` (an agent span counts its own enclosing agents)."""
    by_id = {s.span_id: s for s in run.spans}
    depth, cur, seen = 0, by_id.get(span.parent_span_id or ""), set()
    while cur is not None and cur.span_id not in seen:
        seen.add(cur.span_id)
        depth += cur.role is Role.AGENT
        cur = by_id.get(cur.parent_span_id or "")
    return depth


def _detail(span: Span) -> str:
    parts: list[str] = []
    if span.role is Role.AGENT:
        h = span.hints
        if h:
            parts += [f"role {h.role}" if h.role else "", f"budget {h.max_steps} steps" if h.max_steps else "",
                      "ambiguous request" if h.ambiguous else "", ", ".join(h.constraints),
                      f"ended by {h.termination_reason}" if h.termination_reason else "",
                      f"claimed success: {'yes' if h.claimed_success else 'no'}" if h.claimed_success is not None else "",
                      f"outcome {h.outcome}" if h.outcome else ""]
    elif span.role is Role.LLM:
        parts += [span.model or "", f"{span.input_message_count} messages in" if span.input_message_count is not None else "",
                  f"asked for {', '.join(span.requested_tools)}" if span.requested_tools else "answered"]
    else:
        parts.append(span.tool_kind or "")
        if span.verification_passed is not None:
            parts.append("check passed" if span.verification_passed else "check FAILED")
    if span.error:
        parts.append(f"error {span.error_type or ''}".strip())
    return " · ".join(p for p in parts if p)


def _excerpt(span: Span) -> str | None:
    text = span.tool_result or span.output_text or span.tool_args or (span.hints.final_answer if span.hints else None)
    if not text:
        return None
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "…"


def build_rows(run: Run, diagnosis: Diagnosis | None) -> list[Row]:
    """Agent, model and tool spans in start order, with the verdicts each one evidences."""
    spans = [s for s in run.spans if s.is_agent_related]
    if not spans:
        return []
    start = min(s.start_ns for s in spans)
    total = max(max(s.end_ns for s in spans) - start, 1)
    verdicts = list((diagnosis.verdicts if diagnosis else {}).values())
    rows = []
    for span in spans:
        left = 100 * (span.start_ns - start) / total
        rows.append(Row(
            span=span, depth=_depth(run, span), left=round(left, 2),
            width=round(max(100 * span.duration_ns / total, 0.4), 2),
            detail=_detail(span), excerpt=_excerpt(span),
            verdicts=[v for v in verdicts if span.span_id in v.evidence_span_ids],
        ))
    return rows


def mode_label(mode: str) -> str:
    try:
        return f"{mode} {registry.get(mode).name}"
    except KeyError:
        return mode


def mode_severity(mode: str, overrides: dict[str, str] | None = None) -> str:
    try:
        return registry.severity(mode, overrides)
    except KeyError:
        return "unrated"
