"""A run as compact text for the judge: stable step ids, explicit truncation, a token budget.

Steps get ids ``S1``..``Sn`` in execution order; the judge cites them and
:attr:`RenderedRun.step_spans` maps them back to span ids. Every free-text field is redacted
and keeps its lines (code stays code), indented under its label. Texts are cut only as the
run's budget requires: the largest per-field length at which the whole run fits is found,
and only fields longer than that lose their middle, with a marker saying how much. When even
``MIN_FIELD_CHARS`` per field does not fit, the steps furthest from both ends lose their
content first, then are left out, and the text says so: the start (the task, the first
moves) and the end (how the run finished) are what a diagnosis needs most.
``field_max_chars``, when set, is a hard cap on top.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from mast_otel.processors.judge.redact import Redactor
from mast_otel.processors.model import Role, Run, RunHints, Span
from mast_otel.processors.team import team_of

TokenCounter = Callable[[str], int]

FULL, BRIEF, OMITTED = 2, 1, 0
MIN_FIELD_CHARS = 240  # below this a cut text says too little; compact steps instead
INDENT = "     "


@dataclass(frozen=True, slots=True)
class RenderedRun:
    """The text the judge reads, and how it relates to the run."""

    text: str
    step_spans: dict[str, str]  # "S3" -> span id
    tokens: int  # counted with the judge model's tokenizer
    steps_total: int
    steps_brief: int  # content dropped to fit the budget
    steps_omitted: int  # left out to fit the budget
    content: bool  # captured content was shown (redacted)

    @property
    def compacted(self) -> bool:
        return bool(self.steps_brief or self.steps_omitted)


def run_has_content(run: Run) -> bool:
    """Whether the emitter captured any message content for this run."""
    hints = run.hints
    if hints.task or hints.final_answer:
        return True
    return any(s.input_text or s.output_text or s.tool_args or s.tool_result for s in run.spans)


def truncate(text: str, max_chars: int | None) -> str:
    """Keep the head and tail of ``text``; the marker says how many characters were cut."""
    text = text.strip()
    if max_chars is None or len(text) <= max_chars:
        return text
    keep = max(max_chars, 40)
    head = keep // 2
    tail = keep - head
    return f"{text[:head]} …[{len(text) - keep} chars truncated]… {text[-tail:]}"


def tidy(text: str) -> str:
    """Lines kept; trailing spaces and runs of blank lines dropped (they cost tokens, say nothing)."""
    lines, blank = [], 0
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = line.rstrip()
        blank = blank + 1 if not line else 0
        if blank <= 1:
            lines.append(line.expandtabs(4))
    return "\n".join(lines).strip("\n")


def _labelled(label: str, text: str) -> str:
    if "\n" not in text:
        return f"   {label}: {text}"
    return f"   {label}:\n" + "\n".join(INDENT + line if line else "" for line in text.split("\n"))


def _facts(*pairs: tuple[str, Any]) -> list[str]:
    """``key=value`` for each pair that has a value: sequences comma-joined, booleans yes/no."""
    out = []
    for key, value in pairs:
        if value is None or value == "" or value == ():
            continue
        if isinstance(value, bool):
            value = "yes" if value else "no"
        elif isinstance(value, (tuple, list)):
            value = ",".join(value)
        out.append(f"{key}{'' if key.endswith('#') else '='}{value}")
    return out


class _Renderer:
    def __init__(self, run: Run, redactor: Redactor, include_content: bool, field_max_chars: int | None,
                 cleaned: dict[str, str] | None = None) -> None:
        self.run = run
        self.redactor = redactor
        self.include_content = include_content
        self.field_max_chars = field_max_chars  # the cap this rendering applies (None: no cap)
        self.by_id = {s.span_id: s for s in run.spans}
        self.shown: dict[str, str] = {}  # text already shown -> where ("S2 output")
        # raw text -> redacted and tidied, shared by the budget search's trial renderings
        self._clean: dict[str, str] = {} if cleaned is None else cleaned
        self.longest = 0  # longest field seen, so the budget search knows where to start

    def clean(self, text: str) -> str:
        done = self._clean.get(text)
        if done is None:
            done = self._clean[text] = tidy(self.redactor.redact(text))
        self.longest = max(self.longest, len(done))
        return done

    def field(self, label: str, text: str | None, where: str | None = None) -> str | None:
        """One content field, lines kept; a text shown before is referenced instead of repeated."""
        if not text or not self.include_content:
            return None
        clean = self.clean(text)
        if not clean:
            return None
        if where is not None:
            earlier = self.shown.setdefault(clean, f"{where} {label}")
            if earlier != f"{where} {label}" and len(clean) > 40:
                return f"   {label}: (same text as {earlier})"
        return _labelled(label, truncate(clean, self.field_max_chars))

    def agent_name(self, span: Span) -> str | None:
        if span.agent_name:
            return span.agent_name
        cur = self.by_id.get(span.parent_span_id) if span.parent_span_id else None
        seen: set[str] = set()
        while cur is not None and cur.span_id not in seen:
            if cur.role is Role.AGENT and cur.agent_name:
                return cur.agent_name
            seen.add(cur.span_id)
            cur = self.by_id.get(cur.parent_span_id) if cur.parent_span_id else None
        return None

    def header(self, steps: int) -> list[str]:
        run, hints = self.run, self.run.hints
        facts = [f"agent: {run.agent or 'unknown'}", f"model: {run.model or 'unknown'}", f"steps: {steps}"]
        if run.completion not in ("root_ended", "offline"):
            facts.append(f"ended: {run.completion}")
        lines = ["RUN " + " | ".join(facts)]
        declared = _facts(
            ("max_steps", hints.max_steps),
            ("request_ambiguous", hints.ambiguous),
            ("constraints", hints.constraints),
            ("termination", hints.termination_reason),
            ("claimed_success", hints.claimed_success),
        )
        if declared:
            lines.append("declared: " + "; ".join(declared))
        for agent in run.agent_spans:
            h = agent.hints or RunHints()
            spec = _facts(
                ("role", h.role),
                ("allowed_tools", None if h.allowed_tools is None else ",".join(h.allowed_tools) or "none"),
                ("error", (agent.error_type or "unspecified") if agent.error else None),
            )
            if spec:
                lines.append(f"agent {agent.agent_name or agent.name}: " + "; ".join(spec))
        lines += _team_lines(run)
        task = self.field("task", hints.task)
        if task:
            lines.append(task[3:])
        return lines

    def footer(self) -> list[str]:
        answer = self.field("final answer", self.run.hints.final_answer)
        return [answer[3:]] if answer else []

    def step(self, sid: str, span: Span, level: int) -> list[str]:
        agent = self.agent_name(span)
        if span.role is Role.LLM:
            head = f"llm {span.model or span.request_model or ''}".rstrip()
            facts = _facts(
                ("agent", agent),
                ("messages_in", span.input_message_count),
                ("requests_tools", span.requested_tools),
                ("finish", span.finish_reasons),
            )
        else:
            head = f"tool {span.tool_name or span.name}"
            facts = _facts(
                ("kind", span.tool_kind),
                ("agent", agent),
                ("args#", span.args_hash and span.args_hash[:8]),
                ("result#", span.result_hash and span.result_hash[:8]),
                ("verification", None if span.verification_passed is None else "PASSED" if span.verification_passed else "FAILED"),
            )
        facts += _facts(("error", (span.error_type or "unspecified") if span.error else None))
        parts = [sid, head, *facts]
        summary = " ".join(parts)
        if level < FULL:
            return [summary]
        lines: list[str | None] = [summary]
        if span.error and span.status_message:
            lines.append(self.field("error", span.status_message))
        if span.role is Role.LLM:
            pairs = (("input", span.input_text), ("output", span.output_text))
        else:
            pairs = (("args", span.tool_args), ("result", span.tool_result))
        lines += [self.field(label, text, where=sid) for label, text in pairs]
        return [line for line in lines if line]


MAX_HANDOFFS = 24  # handoffs listed in the header; a longer chain is cut in the middle, saying so


def _team_lines(run: Run) -> list[str]:
    """Who the team is and who handed work to whom, in order: what a reader of a team run needs first."""
    team = team_of(run)
    if not team.is_team:
        return []
    lines = ["team: " + ", ".join(team.agents)]
    edges = [f"{h.source or '?'} -> {h.target or '?'}" + (" (delegated)" if h.kind == "delegation" else "")
             for h in team.handoffs]
    if len(edges) > MAX_HANDOFFS:
        half = MAX_HANDOFFS // 2
        edges = edges[:half] + [f"... {len(edges) - 2 * half} more ..."] + edges[-half:]
    if edges:
        lines.append("handoffs: " + "; ".join(edges))
    return lines


def _middle_first(n: int) -> list[int]:
    """Step positions ordered from the middle of the run outwards."""
    return sorted(range(n), key=lambda i: (-min(i, n - 1 - i), i))


def render_run(
    run: Run,
    *,
    budget_tokens: int,
    count_tokens: TokenCounter,
    redactor: Redactor,
    include_content: bool = True,
    field_max_chars: int | None = None,
) -> RenderedRun:
    """Render ``run`` within ``budget_tokens``: cut the longest texts only as far as the budget
    needs, then degrade the middle steps."""
    steps = run.steps
    ids = [f"S{i + 1}" for i in range(len(steps))]
    probe = _Renderer(run, redactor, include_content, field_max_chars)
    layout = _layout(probe, steps, ids, count_tokens)
    if layout.running > budget_tokens and include_content:
        # The largest per-field length at which the run fits (binary search; lengths only shrink).
        top = min(probe.longest, field_max_chars or probe.longest)
        lo, hi = MIN_FIELD_CHARS, max(top, MIN_FIELD_CHARS)
        best = _layout(_Renderer(run, redactor, include_content, lo, probe._clean), steps, ids, count_tokens)
        while hi - lo > max(20, lo // 20):
            mid = (lo + hi) // 2
            trial = _layout(_Renderer(run, redactor, include_content, mid, probe._clean), steps, ids, count_tokens)
            if trial.running <= budget_tokens:
                lo, best = mid, trial
            else:
                hi = mid
        layout = best
    levels = [FULL] * len(steps)
    running = layout.running
    for target in (BRIEF, OMITTED):
        for i in _middle_first(len(steps)):
            if running <= budget_tokens:
                break
            current = levels[i]
            if current > target:
                running -= layout.cost[current][i] - (layout.cost[target][i] if target != OMITTED else 0)
                levels[i] = target

    # A last pass over everything, names and error types included, not just the content fields.
    text = redactor.redact(_assemble(layout.head, layout.foot, ids, layout.chunks, levels, include_content))
    return RenderedRun(
        text=text,
        step_spans={sid: span.span_id for sid, span in zip(ids, steps)},
        tokens=count_tokens(text),
        steps_total=len(steps),
        steps_brief=levels.count(BRIEF),
        steps_omitted=levels.count(OMITTED),
        content=include_content,
    )


@dataclass(slots=True)
class _Layout:
    head: list[str]
    foot: list[str]
    chunks: dict[int, list[str]]
    cost: dict[int, list[int]]
    running: int  # tokens with every step in full, plus room for notes and gap markers


def _layout(r: _Renderer, steps: list[Span], ids: list[str], count_tokens: TokenCounter) -> _Layout:
    head = r.header(len(steps))
    chunks = {level: ["\n".join(r.step(sid, span, level)) for sid, span in zip(ids, steps)] for level in (FULL, BRIEF)}
    foot = r.footer()
    cost = {level: [count_tokens(c) + 1 for c in chunks[level]] for level in chunks}
    running = count_tokens("\n".join(head + foot)) + 40 + sum(cost[FULL])
    return _Layout(head, foot, chunks, cost, running)


def _assemble(
    head: list[str], foot: list[str], ids: list[str], chunks: dict[int, list[str]], levels: list[int], content: bool
) -> str:
    notes = []
    brief, omitted = levels.count(BRIEF), levels.count(OMITTED)
    if brief or omitted:
        notes.append(
            f"note: to fit the prompt budget, {brief} middle steps are shown without content "
            f"and {omitted} middle steps are left out"
        )
    if not content:
        notes.append("note: message content is not available for this run; judge from structure only")
    body: list[str] = []
    gap: list[str] = []
    for i, (sid, level) in enumerate(zip(ids, levels)):
        if level == OMITTED:
            gap.append(sid)
            continue
        if gap:
            body.append(_gap_line(gap))
            gap = []
        body.append(chunks[level][i])
    if gap:
        body.append(_gap_line(gap))
    return "\n".join(head + notes + ["STEPS"] + body + foot)


def _gap_line(gap: list[str]) -> str:
    span = gap[0] if len(gap) == 1 else f"{gap[0]}..{gap[-1]}"
    return f"[{span}: {len(gap)} steps left out to fit the prompt budget]"
