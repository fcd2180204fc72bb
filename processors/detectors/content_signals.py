"""Content signals: what captured message text shows when a run carries no ``mast.*`` hints.

Each signal reads only the generic content fields (model output, tool arguments, tool
results, the run's final answer) and word/number properties of text, so it means the same
on any framework's spans. None of them quote content: explanations name tools, agents and
step positions only. They fire only when content is present and carry lower confidence than
the structural rules.

- FM-1.3 ``repeated_work``: a model output or a tool input nearly repeats an earlier one of
  the same agent (word 3-shingle Jaccard at or above a threshold): the run re-derives what it
  already had.
- FM-1.5 ``continued_after_answer``: the value the run finally answered had already come out
  of a successful tool call, and the run went on to make more tool calls anyway.
- FM-2.6 ``answer_off_last_result``: the run's short, value-like final answer states none of
  the values its last successful tool call computed: what it says differs from what it did.

All three are off by default (threshold 0): on the development half of the MAST-Data AG2
labels none reached precision 0.7 for its mode (docs/detection.md, "Content signals"). Users
whose runs carry content switch them on in ``detection.content``; ``OPT_IN`` holds the
values the benchmark measures.
"""

from __future__ import annotations

from typing import Iterator

from mast_otel.processors.detectors.settings import ContentConfig
from mast_otel.processors.detectors import text
from mast_otel.processors.detectors.context import RunContext, describe, finding
from mast_otel.processors.model import LLM, TOOL, Finding, Span

DETECTOR = "content"
REPEATED, CONTINUED, OFF_RESULT = "FM-1.3", "FM-1.5", "FM-2.6"
CONFIDENCE = 0.5
MIN_SHINGLES = 12  # shorter texts (a line or two) are too small to call near-duplicates
EVIDENCE_CAP = 5
WINDOW = 32  # earlier steps each step is compared with, so a long run costs linear time, not quadratic

# The thresholds the benchmark switches on to measure the signals (docs/detection.md).
OPT_IN = ContentConfig(repeated_work_similarity=0.8, calls_after_answer=2, max_answer_words=8)


def _content(span: Span) -> str | None:
    """What a step produced: a model call's output, a tool call's input."""
    return span.output_text if span.role is LLM else span.tool_args


def _succeeded(span: Span) -> bool:
    return span.role is TOOL and not span.error and bool((span.tool_result or "").strip())


def _answer_values(ctx: RunContext) -> frozenset[float]:
    """Numbers of the run's final answer, if it is short enough to be a value rather than prose."""
    hints, root = ctx.run.hints, ctx.run.root
    answer = hints.final_answer or (root.output_text if root else None)
    if not answer or len(text.words(answer)) > ctx.config.content.max_answer_words:
        return frozenset()
    return text.numbers(answer)


def _near_repeats(ctx: RunContext, similarity: float) -> Iterator[tuple[Span, Span, float]]:
    """(earlier, later, similarity) for each step whose content nearly repeats an earlier step's."""
    for scope in ctx.scopes:
        earlier: list[tuple[Span, frozenset[int]]] = []
        for step in ctx.steps_of(scope):
            grams = text.shingles(_content(step))
            if len(grams) < MIN_SHINGLES:
                continue
            best = max(((e, text.jaccard(g, grams)) for e, g in earlier[-WINDOW:] if e.role is step.role),
                       key=lambda pair: pair[1], default=None)
            if best is not None and best[1] >= similarity:
                yield best[0], step, best[1]
            earlier.append((step, grams))


def repeated_work(ctx: RunContext) -> list[Finding]:
    similarity = ctx.config.content.repeated_work_similarity
    if not similarity:
        return []
    pairs = list(_near_repeats(ctx, similarity))
    if not pairs:
        return []
    first, later, score = pairs[0]
    evidence = [sid for e, l, _ in pairs[:EVIDENCE_CAP] for sid in (e.span_id, l.span_id)]
    return [finding(REPEATED, CONFIDENCE,
                    f"{len(pairs)} step(s) nearly repeated earlier work of the same agent; the first, "
                    f"{describe(later)}, shares {score:.0%} of its word sequences with an earlier step",
                    evidence, DETECTOR, anchor=later.span_id)]


def continued_after_answer(ctx: RunContext) -> list[Finding]:
    needed = ctx.config.content.calls_after_answer
    answer = _answer_values(ctx) if needed else frozenset()
    if not answer:
        return []
    steps = ctx.steps
    for i, step in enumerate(steps):
        if _succeeded(step) and text.any_same(answer, text.numbers(step.tool_result)):
            more = [s for s in steps[i + 1:] if s.role is TOOL]
            if len(more) < needed:
                return []
            return [finding(CONTINUED, CONFIDENCE,
                            f"{describe(step)} had already produced the value the run finally answered, yet "
                            f"{len(more)} more tool call(s) followed",
                            [step.span_id] + [s.span_id for s in more[:EVIDENCE_CAP]], DETECTOR,
                            anchor=more[0].span_id)]
    return []


def answer_off_last_result(ctx: RunContext) -> list[Finding]:
    answer = _answer_values(ctx) if ctx.config.content.max_answer_words else frozenset()
    if not answer:
        return []
    last = next((s for s in reversed(ctx.steps) if _succeeded(s)), None)
    computed = text.numbers(last.tool_result) if last is not None else frozenset()
    if last is None or not computed or text.any_same(answer, computed):
        return []
    root = ctx.run.root.span_id if ctx.run.root else None
    return [finding(OFF_RESULT, CONFIDENCE,
                    f"the run's final answer states none of the values its last successful step, "
                    f"{describe(last)}, computed", [last.span_id, root], DETECTOR, anchor=root or last.span_id)]
