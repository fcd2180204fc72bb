"""The guards' typed configuration: which guards run, and whether each only records or acts.

Every guard defaults to ``observe``: turning guards on records what they would have done and
changes nothing, until a team switches a guard to ``enforce``. The thresholds are the
processor's own detection groups (``RepetitionConfig``, ``TerminationConfig``), so a guard and
the diagnosis it prevents agree on what a loop or an overrun is.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mast_otel.processors.detectors.settings import DetectionConfig, RepetitionConfig, TerminationConfig

GuardMode = Literal["observe", "enforce"]


class _GuardSection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(True, description="Whether the guard runs at all.")
    mode: GuardMode = Field("observe", description=(
        "observe: record a mast.guard.intervention event for what the guard would have done and change nothing; "
        "enforce: also act (refuse the call, stop the run, refuse the finish)."))


class LoopGuardConfig(_GuardSection):
    """FM-1.3: the same tool call with the same arguments returning the same result again and again."""

    on_loop: Literal["block", "stop"] = Field("block", description=(
        "enforce: 'block' refuses each further repeat and tells the model why; 'stop' ends the run."))
    repetition: RepetitionConfig = Field(RepetitionConfig(), description=(
        "The repetition thresholds, shared with the processor's FM-1.3 detector: a call is refused once "
        "min_tool_repeats identical calls returned the same result in a row."))


class BudgetGuardConfig(_GuardSection):
    """FM-1.5: a hard stop at the step budget, and a "done" state once the run's check passed."""

    stop_when_done: bool = Field(True, description=(
        "End the run as resolved when it starts more work (a tool call that is not a check, clarification or "
        "handoff) after its last check passed with no change since."))
    termination: TerminationConfig = Field(TerminationConfig(), description=(
        "The termination thresholds, shared with the processor's FM-1.5 detector (default_max_steps applies to "
        "runs that declare no max_steps)."))


class VerificationGuardConfig(_GuardSection):
    """FM-3.2/FM-3.3: no success claim while a change is unchecked or the last check failed."""


class ClarifyGuardConfig(_GuardSection):
    """FM-2.2: on a run marked ambiguous, changes wait until a clarification was asked."""


class GuardConfig(BaseModel):
    """All four guards; each observes by default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    loop: LoopGuardConfig = Field(LoopGuardConfig(), description="The loop guard (FM-1.3).")
    budget: BudgetGuardConfig = Field(BudgetGuardConfig(), description="The step-budget and termination guard (FM-1.5).")
    verification: VerificationGuardConfig = Field(VerificationGuardConfig(), description="The verification gate (FM-3.2, FM-3.3).")
    clarify_or_read_only: ClarifyGuardConfig = Field(ClarifyGuardConfig(), description="The clarify-or-read-only guard (FM-2.2).")

    @classmethod
    def all(cls, mode: GuardMode) -> GuardConfig:
        """Every guard on, in ``mode``."""
        return cls(loop=LoopGuardConfig(mode=mode), budget=BudgetGuardConfig(mode=mode),
                   verification=VerificationGuardConfig(mode=mode), clarify_or_read_only=ClarifyGuardConfig(mode=mode))

    def detection(self) -> DetectionConfig:
        """The detection config the shared live trackers read."""
        return DetectionConfig(repetition=self.loop.repetition, termination=self.budget.termination)
