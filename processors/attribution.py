"""Who and where: the agent and the step a failed run went wrong at, from its findings.

A run that failed (its outcome says so) or carries a fatal finding is attributed to the
earliest anchor among its fatal findings (else, for a failed run, among all its findings):
the step that finding concerns and the agent that took it. Within each of those two pools,
rule findings win over judge findings, as the rules name spans by construction; a judge
finding stands in when no rule finding of the pool has an anchor. Pure: a run and its findings in, an :class:`Attribution` or ``None``
out.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Iterable

from mast_otel.processors import taxonomy
from mast_otel.processors.model import Finding, Role, Run, Span


@dataclass(frozen=True, slots=True)
class Attribution:
    agent: str | None  # the agent that took the step
    step_span_id: str | None  # the model or tool call span where it went wrong
    source: str  # "rules" or "judge": which tier's finding it rests on
    mode: str  # the finding's mode
    step_index: int | None = None  # the framework's own step number, when it gave one

    def as_dict(self) -> dict[str, str | int | None]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Attribution:
        return cls(data.get("agent"), data.get("step_span_id"), str(data.get("source") or "rules"),
                   str(data.get("mode") or ""), data.get("step_index"))


def _step_of(run: Run, finding: Finding, by_id: dict[str, Span]) -> Span | None:
    """The finding's step: its anchor if that is a model or tool call, else its earliest evidence step."""
    anchor = by_id.get(finding.anchor_span_id or "")
    if anchor is not None and anchor.role in (Role.LLM, Role.TOOL):
        return anchor
    steps = [by_id[s] for s in finding.evidence_span_ids if s in by_id and by_id[s].role in (Role.LLM, Role.TOOL)]
    return min(steps, key=_when) if steps else anchor


def _when(span: Span) -> tuple[int, int]:
    return span.start_ns, span.step_index if span.step_index is not None else -1


def attribute(run: Run, findings: Iterable[Finding], severity_overrides: dict[str, str] | None = None,
              outcome: str | None = None) -> Attribution | None:
    """The agent and step a failed (or fatally diagnosed) run went wrong at; ``None`` otherwise.

    ``outcome``, when given, is the run's known outcome (e.g. posted after its spans), in place
    of the one its spans carry."""
    findings = list(findings)
    fatal = [f for f in findings if taxonomy.severity(f.mode, severity_overrides) == "fatal"]
    if not fatal and (outcome or run.hints.outcome) != "failure":
        return None
    by_id = run.spans_by_id
    for pool in (fatal, findings):
        for source in ("rules", "judge"):
            located = [(step, f) for f in pool if f.source == source and (step := _step_of(run, f, by_id)) is not None]
            if located:
                step, finding = min(located, key=lambda sf: _when(sf[0]))
                is_step = step.role in (Role.LLM, Role.TOOL)
                return Attribution(step_agent(run, step), step.span_id if is_step else None, source, finding.mode,
                                   step.step_index if is_step else None)
    return None


_NAME_SEPARATORS = re.compile(r"[\s_-]+")


def agent_key(name: str) -> str:
    """An agent name as compared with a label: frameworks spell one agent differently (CrewAI names
    it by its role, "Code Reviewer", where a label says ``code_reviewer``), so case, ``_``, ``-``
    and spaces do not count."""
    return _NAME_SEPARATORS.sub("", name).casefold()


def same_agent(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and agent_key(a) == agent_key(b)


def step_agent(run: Run, step: Span) -> str | None:
    """The name of the agent that took a step: its nearest enclosing agent span's, else the run's."""
    agent = run.agent_of(step)
    return (agent.agent_name if agent is not None else None) or run.agent
