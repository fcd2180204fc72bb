"""Rule detectors: pure functions from a run to findings.

Contract used by the pipeline, the offline commands and the benchmarks:

- ``diagnose(run, config, live=None) -> list[Finding]``: every rule finding for a whole run
  (``live``: its ``LiveDetection``, whose trackers' work is reused where it covers the run).
- ``LiveDetection(config)``: one per in-flight trace; ``observe(span) -> list[Finding]``
  returns findings newly raised by that span (marked ``live=True``).

Both are loops over the registered detectors (``registry().detectors``, :mod:`.catalog`: the
built-in ``DETECTORS`` and any added with ``register``), each a ``Detector`` (:mod:`.base`);
thresholds are the typed sections of ``DetectionConfig``.
"""

from __future__ import annotations

from mast_otel.processors.detectors.settings import DetectionConfig
from mast_otel.processors.detectors.base import Detector, LiveTracker, Rule
from mast_otel.processors.detectors.catalog import DETECTORS, register, registry, rule_modes, unregister
from mast_otel.processors.detectors.context import LiveState, RunContext
from mast_otel.processors.detectors.live import LiveDetection
from mast_otel.processors.detectors.termination import CUT_OFF
from mast_otel.processors.hints import derive_hints, qualify
from mast_otel.processors.hints.settings import HintsConfig
from mast_otel.processors.tools.content_memo import remembering
from mast_otel.processors.model import Finding, Run

__all__ = ["DETECTORS", "Detector", "LiveDetection", "LiveTracker", "Rule", "diagnose", "register", "registry", "rule_findings",
           "rule_modes", "unregister"]


def diagnose(run: Run, config: DetectionConfig | None = None, live: LiveState | None = None, *,
             shortcuts: bool = True) -> list[Finding]:
    """Every rule finding for ``run``, skipping disabled modes and detectors that cover only those.

    ``live``: the run's live detection, whose trackers' work is reused where it covered the same
    steps (see ``RunContext.replay``); the findings are the same with or without it.
    ``shortcuts=False``: the plain path (``RunContext``), with the same findings."""
    config = config or DetectionConfig()
    if not run.steps and run.hints.termination_reason not in CUT_OFF:
        return []  # nothing happened; a run a limit stopped before its first step is still judged
    disabled = frozenset(config.disabled_modes)
    ctx = RunContext(run, config, live, shortcuts=shortcuts)
    found: list[Finding] = []
    with remembering(shortcuts and run.shortcuts):  # texts several detectors read, read once (content_memo)
        for detector in registry().detectors:
            if not disabled:
                found += detector.check(ctx)
            elif not disabled.issuperset(detector.modes):
                found += [f for f in detector.check(ctx) if f.mode not in disabled]
    return found


def rule_findings(run: Run, detection: DetectionConfig | None = None, hints: HintsConfig | None = None) -> list[Finding]:
    """Derive the run's missing hints, run the rule detectors, and qualify what rests on derivations."""
    derive_hints(run, hints)
    return qualify(diagnose(run, detection), run)
