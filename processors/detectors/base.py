"""The one shape every rule detector has, for the whole-run diagnosis and for live detection.

A detector names the modes it can raise and the typed section of ``DetectionConfig`` it reads,
checks a finished run (``check``) and, when its signal can be judged step by step, makes a
live tracker for an in-flight trace (``tracker``). Detection logic stays pure: spans in,
findings out, no I/O, so the same code serves the pipeline, the offline commands and the
benchmarks. ``diagnose`` and ``LiveDetection`` are loops over ``catalog.DETECTORS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol

from pydantic import BaseModel

from mast_otel.processors.detectors.settings import DetectionConfig
from mast_otel.processors.detectors.context import RunContext
from mast_otel.processors.model import Finding, Span


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

    @property
    def live(self) -> bool:
        return self.make_tracker is not None

    def check(self, ctx: RunContext) -> list[Finding]:
        return self.run_check(ctx)

    def tracker(self, config: DetectionConfig) -> LiveTracker | None:
        return self.make_tracker(config) if self.make_tracker is not None else None
