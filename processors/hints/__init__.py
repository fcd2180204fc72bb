"""Hints derived from what agent frameworks emit, where mast-otel's explicit hints are absent.

The rule detectors read a run's hints: which tool calls change things and which check them,
whether a check passed, whether the run claims success, whether a limit stopped it. Runs
made with mast-otel's instrumentation state them (``mast.*``); runs from other frameworks
show them in their own words. :func:`derive_hints` fills in what is missing, in place, and
records on each span or run how every derived value was obtained; an explicit hint (the
instrumentation's, or the tool catalog's) is never overwritten. :func:`qualify` lowers the
confidence of a finding that rests on a derived hint and says which. Both are pure over the
run; calling them twice changes nothing more.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Iterable

from mast_otel.processors.hints import claims, limits, model_names, tool_kinds
from mast_otel.processors.model import Finding, Role, Run, RunHints, Span

if TYPE_CHECKING:
    from mast_otel.processors.config import DetectionConfig, HintsConfig

DERIVED_CONFIDENCE = 0.85  # factor on a finding's confidence when it rests on derived hints
# Run hints each mode's rule reads (besides the fields of its evidence spans).
_MODE_RUN_HINTS = {
    "FM-1.5": ("termination_reason",),
    "FM-2.2": ("claimed_success",),
    "FM-3.1": ("claimed_success", "termination_reason"),
    "FM-3.2": ("claimed_success",),
    "FM-3.3": ("claimed_success",),
}
NOTES_CAP = 4


def derive_hints(run: Run, config: HintsConfig | None = None) -> Run:
    """Fill the hints ``run`` lacks from what its spans show; returns ``run``."""
    if config is None:
        from mast_otel.processors.config import HintsConfig

        config = HintsConfig()
    service, agent = run.service_name, run.agent
    for span in run.spans:
        if span.role is Role.TOOL:
            _tool(span, config, service, agent)
        elif span.role is Role.LLM and span.model and config.model_aliases:
            span.model = model_names.fold(span.model, config.model_aliases)
    root = run.root
    if root is not None:
        if root.hints is None:
            root.hints = RunHints()
        _termination(run, root.hints, config)
        _claim(run, root.hints, config)
    return run


def _tool(span: Span, config: HintsConfig, service: str | None, agent: str | None) -> None:
    name = span.tool_name or span.name
    if span.tool_kind is None:
        rule = tool_kinds.first_match(config.tools, name, span.service_name or service, span.agent_name or agent)
        if rule is not None:
            span.tool_kind = rule.kind  # the catalog is explicit: no derivation note
        elif config.infer_tool_kinds:
            inferred = tool_kinds.infer(name, span.tool_description)
            if inferred is not None:
                span.tool_kind = inferred[0]
                _note(span, "tool_kind", f"kind {inferred[0]!r} inferred because {inferred[1]}")
    if span.tool_kind == "verify" and span.verification_passed is None and not span.error and span.tool_result:
        passed = tool_kinds.verdict(span.tool_result)
        if passed is not None:
            span.verification_passed = passed
            _note(span, "verification_passed", f"check {'passed' if passed else 'failed'}, read from its result")


def _termination(run: Run, hints: RunHints, config: HintsConfig) -> None:
    if hints.termination_reason is not None:
        return
    agents = [s for s in run.spans if s.role is Role.AGENT]
    errors = [t for s in agents for t in (s.error_type, s.status_message)]
    found = limits.limit_in(errors, config.limit_patterns)
    where = "its agent span's error"
    if found is None:
        found = limits.limit_in([hints.final_answer, run.root.output_text if run.root else None], config.limit_patterns)
        where = "its final answer"
    if found is not None:
        hints.termination_reason = "max_steps"
        _note(hints, "termination_reason", f"stopped by the framework's limit, as {where} says")


def _claim(run: Run, hints: RunHints, config: HintsConfig) -> None:
    if hints.claimed_success is not None:
        return
    if hints.termination_reason in ("max_steps", "timeout", "cancelled"):
        return
    answer = hints.final_answer or (run.root.output_text if run.root else None) or _last_reply(run)
    found = claims.claim_in(answer, config.success_patterns, config.failure_patterns)
    if found is not None:
        hints.claimed_success = found[0]
        _note(hints, "claimed_success",
              f"the final answer reads as {'a claim of success' if found[0] else 'saying the task was not done'}")


def _last_reply(run: Run) -> str | None:
    """The model's last words, when the run has no agent-level answer and ends on a reply."""
    steps = run.steps
    last = steps[-1] if steps else None
    if last is not None and last.role is Role.LLM and not last.requested_tools:
        return last.output_text
    return None


def _note(target: Span | RunHints, field: str, how: str) -> None:
    if target.derived is None:
        target.derived = {field: how}
    else:
        target.derived.setdefault(field, how)


def qualify(findings: Iterable[Finding], run: Run) -> list[Finding]:
    """The findings, each that rests on a derived hint with lower confidence and a note saying so."""
    by_id = {s.span_id: s for s in run.spans}
    run_derived = run.root.hints.derived if run.root is not None and run.root.hints is not None else None
    out = []
    for f in findings:
        notes: dict[str, None] = {}
        for sid in f.evidence_span_ids:
            span = by_id.get(sid)
            if span is not None and span.derived and span.role is not Role.AGENT:
                for how in span.derived.values():
                    notes.setdefault(f"{span.tool_name or span.name}: {how}", None)
        if run_derived:
            for field in _MODE_RUN_HINTS.get(f.mode, ()):
                if field in run_derived:
                    notes.setdefault(run_derived[field], None)
        if notes:
            shown = list(notes)[:NOTES_CAP]
            f = dataclasses.replace(f, confidence=round(f.confidence * DERIVED_CONFIDENCE, 3),
                                    explanation=f"{f.explanation} (derived hints: {'; '.join(shown)})")
        out.append(f)
    return out


def rule_findings(run: Run, detection: DetectionConfig | None = None, hints: HintsConfig | None = None) -> list[Finding]:
    """Derive the run's missing hints, run the rule detectors, and qualify what rests on derivations."""
    from mast_otel.processors.detectors import diagnose

    derive_hints(run, hints)
    return qualify(diagnose(run, detection), run)
