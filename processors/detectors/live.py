"""Live detection: failure modes raised while a trace is still streaming in.

Spans arrive in the order they end, so a run's agent span (and with it the run's budget and
role hints) comes last. What can be judged from steps alone is judged as each step arrives,
by the live trackers of the registered detectors (``catalog.registry()``) that have one, the same
incremental code the whole-run diagnosis uses: repetition (FM-1.3), context loss and resets
(FM-1.4, FM-2.1), step budgets and the run-wide limit (FM-1.5, ``budget``), announced-versus-run
tools (FM-2.6). Each mode is raised at most once per trace; the pipeline later confirms or
withdraws it against ``diagnose``.

Cost per span is one call per tracker, each constant except when an agent span arrives (the
FM-1.5 tracker then walks that agent's steps once).
"""

from __future__ import annotations

from operator import attrgetter, is_
from typing import Callable

from mast_otel.processors.detectors.settings import DetectionConfig
from mast_otel.processors.detectors.base import Detector
from mast_otel.processors.detectors.catalog import Registry, registry
from mast_otel.processors.detectors.context import same_finding
from mast_otel.processors.model import LLM, TOOL, Finding, Span


class LiveDetection:
    """One per in-flight trace: a loop over the live trackers of the enabled detectors.

    It also keeps what the whole-run diagnosis can reuse (``context.LiveState``): the steps fed,
    in order, and every finding each tracker returned, so a run whose steps the trackers already
    saw as they are is not replayed through fresh copies of the same trackers.

    One is made for every trace and lives as long as it does, so what every trace would hold
    alike is shared (the enabled detectors, per config) and what most never fill (findings,
    modes raised) is made on the first finding: fewer objects per trace for the collector.
    """

    def __init__(self, config: DetectionConfig | None = None, *, arrival: Callable[[Span], bool] | None = None) -> None:
        self.config = config = config or DetectionConfig()
        # what hint derivation decides of a tool call as it arrives, done before the trackers read it
        # (``hints.arrival``: its kind; whether it stays a step, else no tracker reads it), so they read
        # the steps the diagnosis reads and their work is reused for it (None: each call as it arrives)
        self._arrival = arrival
        disabled, detectors, names, derivable = _enabled(config)
        self._disabled = disabled
        # The tool call fields the live trackers read that hint derivation may fill in after the
        # span was observed (``Registry.live_fields``; it changes nothing else they read on a step
        # but its role), as one tuple: read in C, once per tool call as it is observed and once
        # more when the diagnosis asks what was seen.
        self._derivable = derivable
        self._raised: set[str] | frozenset[str] = _NONE  # a set from the first mode raised
        # Bound methods, made once per trace: ``observe`` runs for every span of every trace.
        self._observers: list[Callable[[Span, str | None], Finding | None]] = []
        self._tracked = names  # detectors with a tracker (the detectors whose check replays it name their findings so)
        # a tracker's findings, by the detector they name; one re-raised, grown, replaces its earlier version
        self._found: dict[str, dict[tuple[str, str | None], Finding]] = {}
        # each step observed and the parent it was keyed by then; each tool call observed and its
        # derivable fields as they were then
        self._steps: list[Span] = []
        self._keys: list[str | None] = []
        self._tools: list[Span] = []
        self._then: list[tuple[object, ...]] = []
        self._trackers: dict[str, object] = {}  # by detector: asked whether they judged as a replay would
        for detector in detectors:
            tracker = detector.tracker(config)
            if tracker is not None:
                self._observers.append(tracker.observe)
                self._trackers[detector.name] = tracker
            else:  # a detector that has no tracker for this trace
                self._tracked = self._tracked - {detector.name}

    @property
    def raised(self) -> frozenset[str]:
        """Modes raised so far."""
        return frozenset(self._raised)

    def observe(self, span: Span) -> list[Finding]:
        """Findings newly raised by ``span`` (each mode once per trace)."""
        key = span.parent_span_id
        role = span.role
        if role is TOOL:
            if self._arrival is not None and not self._arrival(span):
                return []  # it leaves the steps: the diagnosis never reads it either
            self._steps.append(span)
            self._keys.append(key)
            self._tools.append(span)
            self._then.append(self._derivable(span))
        elif role is LLM:
            self._steps.append(span)
            self._keys.append(key)
        new: list[Finding] = []
        for observe in self._observers:
            f = observe(span, key)
            if f is not None:
                self._found.setdefault(f.detector, {})[same_finding(f)] = f
                if f.mode not in self._raised and f.mode not in self._disabled:
                    if not isinstance(self._raised, set):  # the shared empty frozenset
                        self._raised = set()
                    self._raised.add(f.mode)
                    new.append(f)
        return new

    # --- what the whole-run diagnosis reuses (context.LiveState) ---------------------------------
    def saw(self, steps: list[Span], config: DetectionConfig) -> bool:
        # Two passes in C, no Python loop per step: the same span objects in the same order, and
        # each tool call's derivable fields as they were observed (hint derivation turns steps
        # into other spans, never the other way, so the same steps hold the same tool calls).
        seen = self._steps
        return (config is self.config and len(steps) == len(seen) and all(map(is_, steps, seen))
                and list(map(self._derivable, self._tools)) == self._then)

    def keyed_alike(self, steps: list[Span]) -> bool:
        # the parents the steps were keyed by as they arrived (assembly re-parents a step below a span
        # it did not keep to its agent, and derivation gives a team's steps to the agent that took them)
        return list(map(_PARENT, steps)) == self._keys

    def findings_of(self, detector: str) -> list[Finding] | None:
        # a tracker that judges some step otherwise live (where spans may arrive late) says so once it did
        if not getattr(self._trackers.get(detector), "same_as_replay", True):
            return None
        found = self._found.get(detector)
        if found is None:
            return [] if detector in self._tracked else None
        return list(found.values())


_NONE: frozenset[str] = frozenset()
_PARENT = attrgetter("parent_span_id")
# config -> (its disabled modes, the detectors with a live tracker it enables, their names, the
# registry's derivable fields getter); the config (and the registry) is kept in the entry, so its
# id is not reused while the entry lives
_Enabled = tuple[frozenset[str], tuple[Detector, ...], frozenset[str], Callable[[Span], tuple[object, ...]]]
_ENABLED: dict[int, tuple[DetectionConfig, list[str], bool, Registry, _Enabled]] = {}


def _enabled(config: DetectionConfig) -> _Enabled:
    """The detectors whose live trackers ``config`` enables, worked out once per config (and
    again should its ``live`` or ``disabled_modes``, or the registered detectors, change)."""
    entry = _ENABLED.get(id(config))
    current = registry()
    if (entry is not None and entry[0] is config and entry[1] == config.disabled_modes and entry[2] == config.live
            and entry[3] is current):
        return entry[4]
    disabled = frozenset(config.disabled_modes)
    detectors = tuple(d for d in current.live if not (disabled and disabled.issuperset(d.modes))) if config.live else ()
    enabled = (disabled or _NONE, detectors, frozenset(d.name for d in detectors) or _NONE, current.derivable)
    if len(_ENABLED) >= 64:
        _ENABLED.clear()
    _ENABLED[id(config)] = (config, list(config.disabled_modes), config.live, current, enabled)
    return enabled
