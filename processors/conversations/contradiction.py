"""FM-3.3 across turns: a turn claims success that an earlier turn's check contradicts.

A check (a ``verify`` tool call) failed in one turn; a later turn answers that the work is done
without a check or a change of its own, and no check passed in between: the claim rests on
nothing the spans show, against the last verdict they do show. A turn that checks again, or
changes something (its own unchecked change is FM-3.2 on the turn itself), is judged by its run,
and so is one whose answer (with content) is about something else: it must name what was checked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mast_otel.processors.conversations.model import SessionFinding, SpanRef
from mast_otel.processors.conversations.settings import SessionDetectionConfig
from mast_otel.processors.conversations.turn_view import TurnView
from mast_otel.processors.detectors.context import FAILED_CHECK, check_result
from mast_otel.processors.model import Run, Span

DETECTOR = "session_verification"
MODE = "FM-3.3"
_WORD = re.compile(r"[^a-z0-9]+")


def contradicted_checks(views: Sequence[TurnView], config: SessionDetectionConfig) -> list[SessionFinding]:
    """A finding on each turn claiming success while the session's last check, in an earlier turn, failed."""
    findings: list[SessionFinding] = []
    last: tuple[TurnView, Span, str] | None = None  # the last check with a verdict: turn, span, verdict
    for view in views:
        run = view.turn.run
        checks, changed = _checks(run)
        if not checks and not changed and last is not None and last[2] == FAILED_CHECK and run.hints.claimed_success:
            failed_view, failed_span, _ = last
            answer = view.answer_call or run.root
            if not _about(answer, failed_span):
                continue
            evidence = [SpanRef(failed_view.trace_id, failed_span.span_id)]
            if answer is not None:
                evidence.append(view.ref(answer))
            findings.append(SessionFinding(
                mode=MODE, confidence=0.65, turn_trace_id=view.trace_id, detector=DETECTOR,
                evidence=tuple(evidence[: config.max_evidence]),
                explanation=(f"Turn {view.index + 1} answers that the work is done, but the last check in this session "
                             f"({failed_span.tool_name or 'a check'}, turn {failed_view.index + 1}) failed and no turn "
                             "since has checked again or changed anything.")))
        if checks:
            span, verdict = checks[-1]
            last = (view, span, verdict)
    return findings


_MEMO_KEY = "session_checks"


def _checks(run: Run) -> tuple[list[tuple[Span, str]], bool]:
    """The run's checks with a verdict, and whether it changed anything (kept with the run: each
    diagnosis of the session reads every turn again)."""
    return run.memo(_MEMO_KEY, lambda: (
        [(s, r) for s in run.tool_calls if (r := check_result(s)) is not None],
        any(s.tool_kind == "write" for s in run.tool_calls)))


def _about(answer: Span | None, check: Span) -> bool:
    """Whether the claim is about what the check checked: with content, the answer names it (a word of the
    check's tool name); without content only an explicit claim (``mast.run.claimed_success``) is there to go by."""
    text = (answer.output_text if answer is not None else None) or ""
    if not text:
        return True
    words = [w for w in _WORD.split((check.tool_name or "").lower()) if len(w) > 3]
    lowered = text.lower()
    return any(w in lowered or w.rstrip("s") in lowered for w in words)
