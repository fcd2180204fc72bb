"""Who and where: the agent and the step whose decision is a failed run's decisive mistake.

MAST attributes a failure to the decision that caused it, not to the first span that shows
evidence. So each finding is turned into its *decisive step* first:

- a success claim without a check or against a failed one (FM-3.2, FM-3.3), or a run ended
  early by an answer that gives up or claims success over a failure (FM-3.1): the model call
  that ended the run, since the agent that claimed or gave up decided there (not the worker
  whose change was left unchecked); a run that just stopped after an error, saying neither,
  is the error's;
- a repeated call (FM-1.3): the first repetition, not the call that was repeated;
- a limit overrun (FM-1.5): the step that used the budget up (the first past it, or, where the
  framework stops an agent at its budget, the one that reached it), so the agent held to that
  budget is named; else the last model call of the agent that hit its limit, else, for a team stopped on its wrapper, of the entry agent, which kept
  sending work out (the members' steps were spent on its say);
- a run that gave up (FM-3.1 with an answer that says the task was not done): in a team, the
  first agent's turn whose answer gave up, since the agents after it only passed that on;
- anything else: the step the finding is anchored on.

A tool call is the decision of the model call that asked for it, so a tool step becomes that
model call when the spans say so (the model call named the tool among its requested tools).

A run is attributed when it failed (its outcome or its own answer says so), a finding is
fatal, or, while its outcome is unknown, a finding is more than recoverable or says its
success claim does not hold. When the agent held responsible is not the one that ended the run,
that one is named beside it (``ended_by``). Findings that are not merely
recoverable are weighed first; among them the earliest decisive step wins. Rule findings win
over judge findings, which stand in when no rule finding has a step. Pure: a run and its
findings in, an :class:`Attribution` or ``None`` out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from operator import attrgetter
from typing import Iterable, Mapping, Optional, TypeGuard

from mast_otel.processors import taxonomy
from mast_otel.processors.detectors.catalog import registry
from mast_otel.processors.model import AGENT, LLM, TOOL, Diagnosis, Finding, Run, Span
from mast_otel.processors.step_names import span_label, step_numbers
from mast_otel.processors.team import handoff_name, same_action, same_agent
from mast_otel.wire import claims

# Which step each mode's findings blame is what its detectors declare (``Detector.decisive``,
# gathered by the registry): "ending" (decided where the run ended), "claim" (the run's claim of
# success does not hold), "first_repeat", "overrun", "give_up".


@dataclass(frozen=True, slots=True)
class Attribution:
    agent: str | None  # the agent that took the step
    step_span_id: str | None  # the model or tool call span where it went wrong
    source: str  # "rules" or "judge": which tier's finding it rests on
    mode: str  # the finding's mode
    step_index: int | None = None  # the framework's own step number, when it gave one
    ended_by: str | None = None  # the agent that ended the run, when it is not ``agent``
    step_label: str | None = None  # the step as a person reads it: "#3 chat gpt-4o-mini" (``step_names``)

    def as_dict(self) -> dict[str, str | int | None]:
        """``dataclasses.asdict``'s answer (every field a string, a number or ``None``), without its deep copy."""
        return dict(zip(_ATTRIBUTION_FIELDS, _attribution_values(self)))

    @classmethod
    def from_dict(cls, data: dict) -> Attribution:
        return cls(data.get("agent"), data.get("step_span_id"), str(data.get("source") or "rules"),
                   str(data.get("mode") or ""), data.get("step_index"), data.get("ended_by"), data.get("step_label"))


_ATTRIBUTION_FIELDS = tuple(f.name for f in dataclasses.fields(Attribution))
_attribution_values = attrgetter(*_ATTRIBUTION_FIELDS)


def _is_step(span: Span | None) -> TypeGuard[Span]:
    return span is not None and (span.role is LLM or span.role is TOOL)


def _when(span: Span) -> tuple[int, int]:
    return span.start_ns, span.step_index if span.step_index is not None else -1


def _evidence_steps(finding: Finding, by_id: dict[str, Span]) -> list[Span]:
    return [by_id[s] for s in finding.evidence_span_ids if _is_step(by_id.get(s))]


def decisive_step(run: Run, finding: Finding, by_id: dict[str, Span]) -> Span | None:
    """The step whose decision ``finding`` blames (see the module docstring)."""
    mode, rules, calls = finding.mode, finding.source == "rules", run.llm_calls
    decisive = registry().decisive
    if rules and calls and mode in decisive["give_up"] and run.hints.claimed_success is False:
        return _first_give_up(run, calls) or calls[-1]
    if rules and calls and (mode in decisive["claim"] or (mode in decisive["ending"] and run.hints.claimed_success is not None)):
        return calls[-1]
    anchor = by_id.get(finding.anchor_span_id or "")
    if mode in decisive["first_repeat"]:
        evidence = _evidence_steps(finding, by_id)
        if len(evidence) >= 2:
            return _requesting_call(run, evidence[1])
    elif mode in decisive["overrun"] and rules:
        evidence = _evidence_steps(finding, by_id)
        if evidence:
            return _requesting_call(run, min(evidence, key=_when))
        # the agent's last model call over all its turns (a team enters an agent once per turn); a team
        # stopped on its wrapper span: the entry agent's, which kept the team going
        name = anchor.agent_name if anchor is not None and anchor.role is AGENT else None
        own = [s for s in calls if name is None or ((a := run.agent_of(s)) is not None and a.agent_name == name)]
        if not own:
            own = [s for s in calls if (a := run.agent_of(s)) is not None and a.agent_name == run.agent]
        return own[-1] if own else anchor
    if _is_step(anchor):
        return _requesting_call(run, anchor)
    evidence = _evidence_steps(finding, by_id)
    return _requesting_call(run, min(evidence, key=_when)) if evidence else anchor


def _first_give_up(run: Run, calls: list[Span]) -> Span | None:
    """In a team, the first model call whose answer (no tool asked for but a handoff) says the task was not done."""
    if len({a.agent_name for c in calls if (a := run.agent_of(c)) is not None}) < 2:
        return None
    for call in calls:
        if call.output_text and not [t for t in call.requested_tools if not handoff_name(t)]:
            found = claims.claim_in(call.output_text)
            if found is not None and found[0] is False:
                return call
    return None


def _requesting_call(run: Run, step: Span) -> Span:
    """The model call that asked for tool call ``step`` (same agent, before it, naming the tool), else ``step``."""
    if step.role is not TOOL:
        return step
    name = step.tool_name or step.name
    owner = run.agent_of(step)
    for call in reversed(run.llm_calls):
        # a sibling of the tool call is its agent's own (told without a walk up the tree)
        if call.start_ns > step.start_ns or (call.parent_span_id != step.parent_span_id and run.agent_of(call) is not owner):
            continue
        return call if call.requested_tools and same_action(name, call.requested_tools) else step
    return step


def failed(run: Run, findings: list[Finding], severity_overrides: Mapping[str, str] | None, outcome: str | None) -> bool:
    """Whether the run failed or was fatally diagnosed: what makes a run worth attributing. Short of a
    known outcome, the run's own answer or a finding that is more than recoverable says it failed."""
    known = outcome or run.hints.outcome
    if known == "failure" or run.hints.claimed_success is False:
        return True
    severities = {taxonomy.severity(f.mode, severity_overrides) for f in findings}
    if known == "success":
        return "fatal" in severities
    claim = registry().decisive["claim"]
    return bool(severities - {"recoverable"}) or any(f.mode in claim for f in findings)


DecidedSteps = dict[tuple[str, str, Optional[str], tuple[str, ...]], Optional[Span]]
"""Decisive steps found so far for one run as it is, by what ``decisive_step`` reads of a finding."""


def _decided(run: Run, finding: Finding, by_id: dict[str, Span], decided: DecidedSteps | None) -> Span | None:
    """``decisive_step``, looked up in ``decided`` (and kept there) when given: a finding is
    located again for each pool ``attribute`` tries, and a team's findings by ``with_agents`` first."""
    if decided is None:
        return decisive_step(run, finding, by_id)
    key = (finding.mode, finding.source, finding.span_id, finding.evidence_span_ids)
    if key in decided:
        return decided[key]
    step = decided[key] = decisive_step(run, finding, by_id)
    return step


def attribute(run: Run, findings: Iterable[Finding], severity_overrides: Mapping[str, str] | None = None,
              outcome: str | None = None, *, decided: DecidedSteps | None = None) -> Attribution | None:
    """The agent and step a failed (or fatally diagnosed) run went wrong at; ``None`` otherwise.

    ``outcome``, when given, is the run's known outcome (e.g. posted after its spans), in place
    of the one its spans carry. ``decided``: steps located before for this run as it is (kept
    between the calls of one diagnosis; see ``build_diagnosis``)."""
    findings = list(findings)
    if not findings or not failed(run, findings, severity_overrides, outcome):
        return None
    by_id = run.spans_by_id
    if decided is None and run.shortcuts:
        decided = {}
    weighty = [f for f in findings if taxonomy.severity(f.mode, severity_overrides) != "recoverable"]
    for pool in (weighty, findings):
        for source in ("rules", "judge"):
            located = [(step, f) for f in pool if f.source == source and (step := _decided(run, f, by_id, decided)) is not None]
            if located:
                step, finding = min(located, key=lambda sf: _when(sf[0]))
                is_step = _is_step(step)
                agent = step_agent(run, step)
                ender = _ended_by(run)
                return Attribution(agent, step.span_id if is_step else None, source, finding.mode,
                                   step.step_index if is_step else None,
                                   ender if ender and not same_agent(ender, agent) else None,
                                   span_label(step, step_numbers(run.steps).get(step.span_id)) if is_step else None)
    return None


def _ended_by(run: Run) -> str | None:
    """The agent of the run's last step."""
    steps = run.steps
    return step_agent(run, max(steps, key=lambda s: s.end_ns)) if steps else None


def with_agents(run: Run, findings: Iterable[Finding], *, decided: DecidedSteps | None = None) -> list[Finding]:
    """The findings, each naming the agent of its decisive step (a team's metrics count modes per agent).
    ``decided``: as ``attribute`` takes it."""
    by_id = run.spans_by_id
    out = []
    for f in findings:
        step = _decided(run, f, by_id, decided)
        agent = step_agent(run, step) if step is not None else None
        out.append(f if agent is None or agent == f.agent else dataclasses.replace(f, agent=agent))
    return out


def step_agent(run: Run, step: Span) -> str | None:
    """The name of the agent that took a step: its nearest enclosing agent span's, else the run's."""
    agent = run.agent_of(step)
    return (agent.agent_name if agent is not None else None) or run.agent


_START, _END, _GUARDS = attrgetter("start_ns"), attrgetter("end_ns"), attrgetter("guard_interventions")


def build_diagnosis(
    run: Run,
    findings: Iterable[Finding],
    *,
    severity_overrides: Mapping[str, str] | None = None,
    diagnosed_at: float = 0.0,
) -> Diagnosis:
    """Wrap a run's findings with the run facts every output needs."""
    spans = run.spans
    # most runs carry no guard events: told in C before a pass in Python
    interventions = ([g for s in spans if s.guard_interventions for g in s.guard_interventions]
                     if not run.shortcuts or any(map(_GUARDS, spans)) else [])
    prevented: dict[str, str] = {}
    for g in interventions:
        if g.enforced:
            prevented.setdefault(g.failure_mode, g.guard)
    findings = [f if f.mode not in prevented or f.prevented_by else dataclasses.replace(f, prevented_by=prevented[f.mode])
                for f in findings] if prevented else list(findings)
    # the steps findings are located at, kept for the attribution (shortcuts; not the agent they
    # name, which with_agents may change: the key is what decisive_step reads)
    decided: DecidedSteps | None = {} if run.shortcuts else None
    if len(run.agent_spans) > 1:  # a team: each finding names the agent it concerns (metrics count per agent)
        findings = with_agents(run, findings, decided=decided)
    hints = run.hints
    return Diagnosis(
        trace_id=run.trace_id,
        findings=findings,
        fatal=taxonomy.is_fatal({f.mode for f in findings}, severity_overrides),
        service_name=run.service_name,
        agent=run.agent,
        model=run.model,
        root_span_id=run.root.span_id if run.root else None,
        outcome=hints.outcome,
        score=hints.score,
        started_ns=min(map(_START, spans)) if spans else None,
        ended_ns=max(map(_END, spans)) if spans else None,
        diagnosed_at=diagnosed_at,
        completion=run.completion,
        span_count=len(run.spans),
        step_count=len(run.steps),
        attribution=attribute(run, findings, severity_overrides, decided=decided),
        interventions=interventions,
    )
