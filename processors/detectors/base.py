"""The one shape every rule detector has, for the whole-run diagnosis and for live detection.

A detector names the modes it can raise and the typed section of ``DetectionConfig`` it reads,
checks a finished run (``check``) and, when its signal can be judged step by step, makes a
live tracker for an in-flight trace (``tracker``). It also declares what the rest of the
pipeline must know about it, so that nothing about a detector is written anywhere else:

- ``run_hints``: the run-level hints (``RunHints`` fields) its findings rest on; a finding is
  given lower confidence when hint derivation filled one of them in (``hints.qualify``);
- ``decisive``: which step its findings blame (``DecisiveStep``, read by ``attribution``);
- ``live_fields``: the tool call fields its live tracker reads that hint derivation may fill in
  after live detection observed the span (live work is reused only while they are unchanged).

Detection logic stays pure: spans in, findings out, no I/O, so the same code serves the
pipeline, the offline commands and the benchmarks. ``diagnose``, ``LiveDetection``,
``attribution`` and ``hints.qualify`` read the registry in :mod:`.catalog`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Protocol, get_args

from pydantic import BaseModel

from mast_otel.processors.detectors.settings import DetectionConfig
from mast_otel.processors.detectors.context import RunContext
from mast_otel.processors.model import Finding, Span


# Which step of a run a finding blames, when it is not the step the finding is anchored on
# (``attribution.decisive_step`` says what each one means):
# - "ending": decided where the run ended (the model call that ended it, when the run said
#   whether it succeeded);
# - "claim": the run's claim of success does not hold (the last model call; such a finding
#   also makes a run worth attributing);
# - "give_up": the run gave up (in a team, the first agent's turn whose answer gave up);
# - "first_repeat": a repetition (the first repeat, not the call repeated);
# - "overrun": a limit overrun (the step that used the budget up, else the agent's last model call).
DecisiveStep = Literal["ending", "claim", "give_up", "first_repeat", "overrun"]
DECISIVE_STEPS: tuple[DecisiveStep, ...] = get_args(DecisiveStep)


class LiveTracker(Protocol):
    """Incremental state for one in-flight trace; fed every span in the order spans end."""

    def observe(self, span: Span, key: str | None) -> Finding | None:
        """A finding ``span`` raises, else ``None``; ``key`` is the span's parent span id.

        Most spans raise nothing, so trackers return early: this runs once per span per tracker.
        A finding returned again with the same mode and anchor (a loop that went on) replaces the
        earlier one in the diagnosis; live detection counts the mode once.
        """
        ...


class Detector(Protocol):
    """A rule detector: which modes, which thresholds, a whole-run check and maybe a live tracker."""

    @property
    def name(self) -> str: ...

    @property
    def modes(self) -> tuple[str, ...]: ...

    @property
    def config(self) -> type[BaseModel] | None:
        """The typed section of ``DetectionConfig`` the detector reads (``None``: no thresholds)."""
        ...

    @property
    def live(self) -> bool:
        """Whether ``tracker`` makes a live tracker."""
        ...

    @property
    def run_hints(self) -> tuple[str, ...]:
        """The ``RunHints`` fields its findings rest on (``hints.qualify`` notes a derived one)."""
        ...

    @property
    def decisive(self) -> tuple[DecisiveStep, ...]:
        """Which step its findings blame, when not their anchor (``attribution``)."""
        ...

    @property
    def live_fields(self) -> tuple[str, ...]:
        """The tool call (``Span``) fields its live tracker reads that hint derivation may fill in."""
        ...

    def check(self, ctx: RunContext) -> list[Finding]:
        """Findings for a finished run (may include modes the caller then drops as disabled)."""
        ...

    def tracker(self, config: DetectionConfig) -> LiveTracker | None:
        """A new live tracker for one trace, or ``None`` when the signal needs the whole run."""
        ...


@dataclass(frozen=True, slots=True)
class Rule:
    """A ``Detector`` made of functions: the usual way to write one."""

    name: str
    modes: tuple[str, ...]
    run_check: Callable[[RunContext], list[Finding]]
    config: type[BaseModel] | None = None
    make_tracker: Callable[[DetectionConfig], LiveTracker] | None = None
    run_hints: tuple[str, ...] = ()
    decisive: tuple[DecisiveStep, ...] = ()
    live_fields: tuple[str, ...] = ()

    @property
    def live(self) -> bool:
        return self.make_tracker is not None

    def check(self, ctx: RunContext) -> list[Finding]:
        return self.run_check(ctx)

    def tracker(self, config: DetectionConfig) -> LiveTracker | None:
        return self.make_tracker(config) if self.make_tracker is not None else None
