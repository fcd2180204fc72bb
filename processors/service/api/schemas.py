"""Typed shapes of the HTTP API: validated at the edge, converted from the plain model inside."""

from __future__ import annotations

from typing import Literal, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field

from mast_otel.processors import taxonomy
from mast_otel.processors.model import Diagnosis, Finding
from mast_otel.processors.service.store.run_steps import RunStep
from mast_otel.processors.step_names import StepNames
from mast_otel.processors import what_to_do as advice
from mast_otel.processors.severity_from_outcomes import ModeEvidence
from mast_otel.processors.team_view import TeamView

Outcome = Literal["success", "failure", "unknown"]
TRACE_ID_PATTERN = r"^[0-9a-fA-F]{32}$"


class WhatToDoOut(BaseModel):
    """What the mode is, what prevents it and what tunes its detection (the same for every finding of a mode)."""

    description: str = Field(description="the mode's definition")
    prevention: str = Field(description="what prevents it, in plain words")
    guards: list[str] = Field(description="agent-side guards that act on it (GuardConfig fields: loop, budget, "
                                          "verification, clarify_or_read_only)")
    settings: list[str] = Field(description="processor settings that tune its detection (dotted configuration keys)")
    docs: str = Field(description="the mode's section in the docs (docs/modes.md#...)")

    @classmethod
    def of(cls, mode: str) -> Optional[WhatToDoOut]:
        found = advice.known(mode)
        if found is None:
            return None
        return cls(description=found.description, prevention=found.prevention, guards=list(found.guards),
                   settings=list(found.settings), docs=found.docs)


class FindingOut(BaseModel):
    mode: str
    confidence: float
    explanation: str
    evidence_span_ids: list[str]
    evidence_steps: Optional[list[str]] = Field(None, description=(
        "in /v1/diagnoses/{id}: each evidence span as a person reads it (\"#3 chat gpt-4o-mini\", \"#4 tool "
        "restart_deployment\"), in the order of evidence_span_ids; the span id where the step is not in the stored "
        "step list; null without a step list"))
    what_to_do: Optional[WhatToDoOut] = Field(None, description=(
        "in /v1/diagnoses/{id}: the mode's description, what prevents it, the settings that tune it and its docs section"))
    span_id: Optional[str]
    source: str
    detector: str
    live: bool
    prompt_version: Optional[str] = Field(None, description="judge findings: the judge's prompt and answer schema version")
    prevented_by: Optional[str] = Field(None, description=(
        "the agent-side guard that acted on this mode during the run (enforce mode), if one did"))
    agent: Optional[str] = Field(None, description="in a team run: the agent whose decision the finding concerns")

    @classmethod
    def of(cls, f: Finding, names: StepNames | None = None, detailed: bool = False) -> FindingOut:
        return cls(
            mode=f.mode, confidence=f.confidence, explanation=f.explanation, evidence_span_ids=list(f.evidence_span_ids),
            evidence_steps=names.labels(f.evidence_span_ids) if names is not None else None,
            what_to_do=WhatToDoOut.of(f.mode) if detailed else None,
            span_id=f.anchor_span_id, source=f.source, detector=f.detector, live=f.live, prompt_version=f.prompt_version,
            prevented_by=f.prevented_by, agent=f.agent,
        )


class GuardInterventionOut(BaseModel):
    """A ``mast.guard.intervention`` event an agent-side guard recorded on a span."""

    guard: str
    mode: str
    action: str
    failure_mode: str


class ModeOut(BaseModel):
    """One failure mode's merged verdict, with the registry's name, category and severity."""

    mode: str
    name: str
    category: str
    severity: str
    confidence: float
    sources: list[str]
    evidence_span_ids: list[str]
    evidence_steps: Optional[list[str]] = Field(None, description=(
        "in /v1/diagnoses/{id}: each evidence span as a person reads it, in the order of evidence_span_ids"))
    explanations: list[str]
    what_to_do: Optional[WhatToDoOut] = Field(None, description=(
        "in /v1/diagnoses/{id}: the mode's description, what prevents it, the settings that tune it and its docs section"))
    prevented_by: Optional[str] = Field(None, description="the guard that acted on this mode in enforce mode, if one did")
    agents: list[str] = Field(default_factory=list, description=(
        "the agents whose decisions the mode concerns (a team run), else the run's agent"))


class HandoffOut(BaseModel):
    """One agent passing work to another."""

    model_config = ConfigDict(populate_by_name=True)

    source: Optional[str] = Field(alias="from", description="the agent that handed off")
    target: Optional[str] = Field(alias="to", description="the agent that took over (null: the spans do not say)")
    span_id: str = Field(description="the span that carried the handoff (a transfer or delegation tool call)")
    tool: str


class ToolCallOwnerOut(BaseModel):
    """Which agent made one tool call."""

    span_id: str
    tool: str
    agent: Optional[str]
    kind: Optional[str]


class TeamOut(BaseModel):
    """The run's agents, handoffs and tool ownership, as the run page's lanes show them."""

    agents: list[str] = Field(description="agents that made a model or tool call, in the order they first did")
    handoffs: list[HandoffOut]
    tool_calls: list[ToolCallOwnerOut] = Field(description="every tool call in start order, with the agent that made it")

    @classmethod
    def of(cls, team: TeamView) -> TeamOut:
        return cls(agents=list(team.agents),
                   handoffs=[HandoffOut(source=h.source, target=h.target, span_id=h.span_id, tool=h.tool) for h in team.handoffs],
                   tool_calls=[ToolCallOwnerOut(span_id=t.span_id, tool=t.tool, agent=t.agent, kind=t.kind) for t in team.tool_calls])


class StepOut(BaseModel):
    """One agent, model or tool span of the run, without content."""

    span_id: str
    parent_span_id: Optional[str]
    role: Literal["agent", "llm", "tool"]
    name: str
    agent: Optional[str]
    step_index: Optional[int]
    start_ns: int
    end_ns: int
    model: Optional[str]
    input_message_count: Optional[int]
    requested_tools: list[str]
    tool_name: Optional[str]
    tool_kind: Optional[str]
    error: Optional[str] = Field(description="the error type when the span failed")
    verification_passed: Optional[bool]
    budget: Optional[int] = Field(description="an agent's step budget")
    constraints: list[str]
    termination_reason: Optional[str]
    guard_interventions: list[GuardInterventionOut] = Field([], description="what agent-side guards did on this span")

    @classmethod
    def of(cls, step: RunStep) -> StepOut:
        fields = {name: getattr(step, name) for name in cls.model_fields if name != "guard_interventions"}
        guarded = [GuardInterventionOut(guard=g, mode=m, action=a, failure_mode=f) for g, m, a, f in step.interventions]
        return cls(**fields, guard_interventions=guarded)


class StepFoldOut(BaseModel):
    """Steps left out of a long step list."""

    after: int = Field(description="how many of the listed steps come before the folded ones")
    count: int = Field(description="how many steps were folded there")


class AttributionOut(BaseModel):
    agent: Optional[str] = Field(description="the agent that took the step the run went wrong at")
    step_span_id: Optional[str] = Field(description="the model or tool call span where it went wrong")
    step_label: Optional[str] = Field(None, description=(
        "that step as a person reads it: its number, kind and name (\"#3 chat gpt-4o-mini\")"))
    source: str = Field(description="rules or judge: the tier whose finding this rests on")
    mode: str = Field(description="the mode of that finding (the earliest fatal one, else the earliest)")
    step_index: Optional[int] = Field(description="the framework's step number of that span, when known")
    ended_by: Optional[str] = Field(None, description="the agent that ended the run, when it is not the agent "
                                                      "the run went wrong at (a team member's give-up passed on)")


class DiagnosisOut(BaseModel):
    trace_id: str
    service_name: Optional[str]
    agent: Optional[str]
    model: Optional[str]
    root_span_id: Optional[str]
    fatal: bool
    modes: list[ModeOut]
    findings: list[FindingOut]
    withdrawn_live_findings: list[FindingOut] = Field(description="raised while the run was going, not confirmed at completion")
    outcome: Optional[str]
    score: Optional[float]
    started_ns: Optional[int]
    ended_ns: Optional[int]
    diagnosed_at: float
    completion: str
    span_count: int
    step_count: int
    revision: int
    attribution: Optional[AttributionOut] = Field(
        None, description="for a failed or fatally diagnosed run: the agent and step it went wrong at")
    steps: Optional[list[StepOut]] = Field(
        None, description="the run's agent, model and tool spans in start order, with ?include=steps "
                          "(null when not asked for, or for runs diagnosed before step lists were kept)")
    steps_folded: Optional[list[StepFoldOut]] = Field(
        None, description="with ?include=steps, where steps were left out of a list longer than store.max_step_list_bytes "
                          "(the steps findings point at, the first and the last are kept); empty when none were")
    steps_shortened: Optional[bool] = Field(
        None, description="with ?include=steps: long names and lists were shortened to fit store.max_step_list_bytes")
    team: Optional[TeamOut] = Field(
        None, description="on /v1/diagnoses/{trace_id}: the run's agents, handoffs and which agent made each tool call, "
                          "read from its step list as the run page's lanes are (null for a run without a step list)")

    @classmethod
    def of(cls, d: Diagnosis, severity_overrides: Mapping[str, str] | None = None, names: StepNames | None = None,
           detailed: bool = False) -> DiagnosisOut:
        """``detailed`` (one diagnosis asked for by id): each mode and finding carries its what-to-do, and, given
        the run's step ``names``, its evidence as step labels; lists of diagnoses stay lean."""
        modes = []
        for mode, verdict in d.verdicts.items():
            info = taxonomy.get(mode)
            modes.append(ModeOut(
                mode=mode, name=info.name, category=info.category, severity=taxonomy.severity(mode, severity_overrides),
                confidence=verdict.confidence, sources=list(verdict.sources), evidence_span_ids=list(verdict.evidence_span_ids),
                evidence_steps=names.labels(verdict.evidence_span_ids) if names is not None else None,
                what_to_do=WhatToDoOut.of(mode) if detailed else None,
                explanations=list(dict.fromkeys(f.explanation for f in verdict.findings)),
                prevented_by=next((f.prevented_by for f in verdict.findings if f.prevented_by), None),
                agents=list(dict.fromkeys(f.agent or d.agent for f in verdict.findings if f.agent or d.agent)),
            ))
        return cls(
            trace_id=d.trace_id, service_name=d.service_name, agent=d.agent, model=d.model, root_span_id=d.root_span_id,
            fatal=d.fatal, modes=modes, findings=[FindingOut.of(f, names, detailed) for f in d.findings],
            withdrawn_live_findings=[FindingOut.of(f, names, detailed) for f in d.withdrawn], outcome=d.outcome, score=d.score,
            started_ns=d.started_ns, ended_ns=d.ended_ns, diagnosed_at=d.diagnosed_at, completion=d.completion,
            span_count=d.span_count, step_count=d.step_count, revision=d.revision,
            attribution=AttributionOut(**d.attribution.as_dict()) if d.attribution is not None else None,
        )


class DiagnosisPage(BaseModel):
    total: int
    limit: int
    offset: int
    items: list[DiagnosisOut]


class OutcomeIn(BaseModel):
    """Ground truth that arrives after the run."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str = Field(pattern=TRACE_ID_PATTERN, description="32 hex characters")
    outcome: Outcome
    score: Optional[float] = Field(None, allow_inf_nan=False)


class OutcomeOut(BaseModel):
    trace_id: str
    status: Literal["applied", "pending"] = Field(description="pending: kept until the run is diagnosed")
    diagnosis: Optional[DiagnosisOut] = None


class ModeSeverityOut(BaseModel):
    """One mode's prevalence in failed versus successful runs of one group of runs."""

    mode: str
    severity: taxonomy.Severity = Field(description="the severity in force (default or configured override)")
    failed_runs: int
    successful_runs: int
    in_failed_runs: int = Field(description="failed runs showing the mode")
    in_successful_runs: int = Field(description="successful runs showing the mode")
    prevalence_failed: Optional[float]
    prevalence_successful: Optional[float]
    prevalence_failed_interval: Optional[tuple[float, float]] = Field(None, description="Wilson 95% interval")
    prevalence_successful_interval: Optional[tuple[float, float]] = Field(None, description="Wilson 95% interval")
    lift: Optional[float] = Field(None, description="prevalence in failed runs / in successful runs; null below min_outcomes")
    lift_low: Optional[float] = Field(None, description="95% log-ratio confidence interval, lower bound")
    lift_high: Optional[float] = Field(None, description="95% log-ratio confidence interval, upper bound")
    suggested: Optional[taxonomy.Severity] = Field(None, description="fatal when lift_low > 1; recoverable when also seen in successful runs")

    @classmethod
    def of(cls, e: ModeEvidence) -> "ModeSeverityOut":
        lift, in_failed, in_successful = e.lift, e.failed_interval, e.successful_interval
        return cls(mode=e.mode, severity=e.default_severity, failed_runs=e.failed, successful_runs=e.successful,
                   in_failed_runs=e.in_failed, in_successful_runs=e.in_successful,
                   prevalence_failed=e.prevalence_failed, prevalence_successful=e.prevalence_successful,
                   prevalence_failed_interval=(in_failed.low, in_failed.high) if in_failed else None,
                   prevalence_successful_interval=(in_successful.low, in_successful.high) if in_successful else None,
                   lift=lift[0] if lift else None, lift_low=lift[1].low if lift else None,
                   lift_high=lift[1].high if lift else None, suggested=e.suggested)


class SeverityGroupOut(BaseModel):
    model: str = Field(description='a model, or "(all models)"')
    modes: list[ModeSeverityOut]


class SeverityOut(BaseModel):
    """Severity read from the store's outcomes, and the config that would adopt it."""

    min_outcomes: int
    groups: list[SeverityGroupOut] = Field(description=(
        'all models together ("(all models)", first), then one page of models, most runs with a known outcome first'))
    total_models: int = Field(description="models in the time range (runs that named none count as one: \"(unknown)\")")
    limit: int = Field(description="models per page")
    offset: int = Field(description="models skipped before this page")
    severity_overrides: dict[str, taxonomy.Severity] = Field(
        description="detection.severity_overrides adopting the all-models suggestions (empty: nothing to change)")
    config_line: Optional[str] = Field(None, description="the same map as one YAML line under detection:")
    env_line: Optional[str] = Field(None, description="the same map as an environment variable")
