"""The judge over a session: every turn rendered in order, one call, cross-turn verdicts as session findings.

Each turn is rendered as the judge renders a run, within an even share of the prompt budget, under
a ``TURN k`` heading; its step ids become ``Tk.Sn`` so the judge can cite steps on any turn. Only
verdicts whose cited steps lie on two turns or more are session findings (one turn's own failure is
that run's diagnosis); each goes on the second turn it cites, the first that shows it against an
earlier one. The judge's safeguards (content policy, redaction, cache, budget, circuit breaker)
apply as for a run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mast_otel.processors.conversations.model import SessionFinding, SpanRef, Turn
from mast_otel.processors.judge import client as outcomes
from mast_otel.processors.judge.engine import Judge, JudgeOutcome
from mast_otel.processors.judge.render import RenderedRun, render_run, run_has_content

DETECTOR = "session_judge"
_MIN_TURN_TOKENS = 128
# Where the run renderer writes step ids: a step's first line, a gap marker, a repeated-text note.
_STEP_LINE = re.compile(r"^S(\d+)\b", re.MULTILINE)
_GAP = re.compile(r"\[S(\d+)(?:\.\.S(\d+))?:")
_SAME_AS = re.compile(r"\(same text as S(\d+)\)")


def _turn_step_ids(text: str, prefix: str) -> str:
    """A rendered run's step ids (``S3``, ranges, back-references) renamed as that turn's (``T2.S3``)."""
    text = _STEP_LINE.sub(lambda m: f"{prefix}S{m.group(1)}", text)
    text = _GAP.sub(lambda m: f"[{prefix}S{m.group(1)}" + (f"..{prefix}S{m.group(2)}" if m.group(2) else "") + ":", text)
    return _SAME_AS.sub(lambda m: f"(same text as {prefix}S{m.group(1)})", text)


def render_session(judge: Judge, turns: Sequence[Turn], include_content: bool) -> tuple[RenderedRun, dict[str, SpanRef]]:
    """The session as the judge reads it, and each cited step id's span."""
    share = max(judge.run_budget // max(len(turns), 1), _MIN_TURN_TOKENS)
    parts = [f"SESSION of {len(turns)} turns of one conversation, in order: each turn is a separate run of the "
             "same agent; step ids are Tk.Sn (turn k, step n). Judge what goes wrong between turns: history "
             "lost, work repeated for nothing, answers that contradict earlier turns."]
    refs: dict[str, SpanRef] = {}
    total = brief = omitted = 0
    for k, turn in enumerate(turns, 1):
        rendered = render_run(turn.run, budget_tokens=share, count_tokens=judge.count_tokens, redactor=judge.redactor,
                              include_content=include_content, field_max_chars=judge.config.field_max_chars)
        prefix = f"T{k}."
        text = _turn_step_ids(rendered.text, prefix)
        parts += [f"TURN {k}", text]
        refs.update({prefix + sid: SpanRef(turn.trace_id, span) for sid, span in rendered.step_spans.items()})
        total, brief, omitted = total + rendered.steps_total, brief + rendered.steps_brief, omitted + rendered.steps_omitted
    text = "\n".join(parts)
    steps = {sid: ref.span_id for sid, ref in refs.items()}
    return RenderedRun(text=text, step_spans=steps, tokens=judge.count_tokens(text), steps_total=total,
                       steps_brief=brief, steps_omitted=omitted, content=include_content), refs


def max_turns(judge: Judge) -> int:
    """Turns the judge reads at most: as many as fit its prompt budget at the smallest share each."""
    return max(judge.run_budget // _MIN_TURN_TOKENS, 2)


def judge_session(judge: Judge, turns: Sequence[Turn], *, wait_for_budget: bool = False
                  ) -> tuple[JudgeOutcome, list[SessionFinding]]:
    """One judgement of a session's turns (its latest :func:`max_turns`); the outcome says why there
    are no findings when there are none."""
    turns = sorted(turns, key=lambda t: t.started_ns)[-max_turns(judge):]
    has_content = any(run_has_content(t.run) for t in turns)
    if not has_content and not judge.config.allow_structure_only_runs:
        return JudgeOutcome(outcomes.NO_CONTENT, message="the session was captured without content"), []
    rendered, refs = render_session(judge, turns, include_content=has_content and judge.config.allow_content)
    outcome = judge.assess(rendered, wait_for_budget=wait_for_budget)
    if outcome.assessment is None:
        return outcome, []
    findings = []
    for verdict in outcome.assessment.detected(judge.config.min_confidence):
        evidence = tuple(dict.fromkeys(refs[s] for s in verdict.steps if s in refs))
        cited = list(dict.fromkeys(ref.trace_id for ref in evidence))
        if len(cited) < 2:
            continue
        order = {t.trace_id: i for i, t in enumerate(turns)}
        anchor = sorted(cited, key=lambda trace: order.get(trace, len(order)))[1]
        findings.append(SessionFinding(
            mode=verdict.mode, confidence=round(verdict.confidence, 3), evidence=evidence, turn_trace_id=anchor,
            explanation=f"LLM judge: {verdict.rationale}" if verdict.rationale else "LLM judge",
            detector=f"{DETECTOR}:{judge.model}", source="judge"))
    return outcome, findings
