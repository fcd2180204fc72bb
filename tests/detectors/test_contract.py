"""The detector contract: what every detector declares is what the pipeline reads about it.

The tables ``hints.qualify``, ``attribution`` and live detection read (run hints per mode, the
decisive step per mode, the tool call fields live work is reused on) are built from the
registry; a detector registered from outside the package runs in ``diagnose``, in live
detection and in attribution without an edit anywhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from mast_otel.processors import attribution
from mast_otel.processors.config import DetectionConfig
from mast_otel.processors.detectors import DETECTORS, LiveDetection, Rule, diagnose, register, registry, unregister
from mast_otel.processors.detectors.base import DECISIVE_STEPS, LiveTracker
from mast_otel.processors.detectors.context import RunContext, finding
from mast_otel.processors.hints import DERIVED_CONFIDENCE, qualify, rests_on
from mast_otel.processors.model import TOOL, Finding, Span


def test_the_tables_are_what_the_detectors_declare() -> None:
    reg = registry()
    assert reg.detectors[: len(DETECTORS)] == DETECTORS
    modes = {m for d in reg.detectors for m in d.modes}
    for mode in modes:
        declared = {h for d in reg.detectors if mode in d.modes for h in d.run_hints}
        assert set(reg.run_hints.get(mode, ())) == declared, mode
    assert set(reg.run_hints) <= modes
    assert rests_on.mode_run_hints() == reg.run_hints  # what hints.qualify reads
    for step in DECISIVE_STEPS:
        assert reg.decisive[step] == {m for d in reg.detectors if step in d.decisive for m in d.modes}, step
    assert set(reg.live_fields) == {f for d in reg.detectors if d.live for f in d.live_fields}
    span = Span("t", "s", None, "execute_tool x", 1, 2, role=TOOL, args_hash="a", error=True, tool_kind="read")
    assert reg.derivable(span) == tuple(getattr(span, f) for f in reg.live_fields)


def test_the_built_in_declarations_keep_what_the_pipeline_read_before_the_contract() -> None:
    """The tables as they were written by hand before each detector declared its part (FM-2.5 added:
    its rule rests on the run's claim of success as FM-3.2's does)."""
    reg = registry()
    assert reg.run_hints == {"FM-1.1": ("rejected_by_check",), "FM-1.5": ("termination_reason",),
                             "FM-2.2": ("claimed_success",), "FM-2.5": ("claimed_success",),
                             "FM-3.1": ("claimed_success", "termination_reason"),
                             "FM-3.2": ("claimed_success",), "FM-3.3": ("claimed_success",)}
    assert reg.decisive == {"ending": {"FM-3.1", "FM-3.2", "FM-3.3"}, "claim": {"FM-3.2", "FM-3.3"},
                            "first_repeat": {"FM-1.3"}, "overrun": {"FM-1.5"}, "give_up": {"FM-3.1"}}
    assert reg.live_fields == ("args_hash", "result_hash", "error", "error_type", "tool_kind")


# --- a detector added from outside -----------------------------------------------------------

TOY = "wandering"


class _Wandering:
    """Live: a call of a tool named "wander" drifts off the task (FM-2.3)."""

    def observe(self, span: Span, key: str | None) -> Finding | None:
        if span.role is TOOL and span.tool_name == "wander":
            return finding("FM-2.3", 0.8, "the agent wandered off the task", [span.span_id], TOY, anchor=span.span_id)
        return None


def _tracker(config: DetectionConfig) -> LiveTracker:
    return _Wandering()


def _check(ctx: RunContext) -> list[Finding]:
    return ctx.replay(TOY, lambda: _Wandering().observe)


TOY_DETECTOR = Rule(TOY, ("FM-2.3",), _check, None, _tracker, run_hints=("claimed_success",), decisive=("claim",),
                    live_fields=("tool_result",))


@pytest.fixture
def toy() -> Iterator[Rule]:
    register(TOY_DETECTOR)
    try:
        yield TOY_DETECTOR
    finally:
        unregister(TOY)


def _wandering_run(rb):
    a = rb.agent()
    rb.llm(a, requested_tools=("wander",))
    wander = rb.tool(a, "wander", {"to": "elsewhere"}, "somewhere")
    last = rb.llm(a)
    return rb.run(), wander, last


def test_a_registered_detector_runs_in_diagnose_live_detection_and_attribution(rb, toy) -> None:
    run, wander, last = _wandering_run(rb)

    found = [f for f in diagnose(run) if f.detector == TOY]
    assert [(f.mode, f.anchor_span_id) for f in found] == [("FM-2.3", wander.span_id)]

    live = LiveDetection()
    raised = [f for s in sorted(run.spans, key=lambda s: s.end_ns) for f in live.observe(s)]
    assert [f.mode for f in raised if f.detector == TOY] == ["FM-2.3"]
    assert live.findings_of(TOY) and diagnose(run, DetectionConfig(), live) == diagnose(run)

    # "claim": the run's claim does not hold, so the run is attributed, to the call that ended it
    blamed = attribution.attribute(run, found)
    assert blamed is not None and (blamed.mode, blamed.step_span_id) == ("FM-2.3", last.span_id)


def test_without_the_registration_nothing_reads_it(rb) -> None:
    run, wander, _ = _wandering_run(rb)
    assert not [f for f in diagnose(run) if f.detector == TOY]
    assert LiveDetection().findings_of(TOY) is None
    planted = finding("FM-2.3", 0.8, "the agent wandered off the task", [wander.span_id], TOY, anchor=wander.span_id)
    # not a claim mode: a recoverable finding of a run of unknown outcome is not attributed
    assert attribution.failed(run, [planted], {"FM-2.3": "recoverable"}, None) is False


def test_a_registered_detectors_run_hints_qualify_its_findings(rb, toy) -> None:
    run, _, _ = _wandering_run(rb)
    run.root.hints.claimed_success = True
    run.root.hints.derived = {"claimed_success": "claimed, read from its last answer"}
    (f,) = [f for f in diagnose(run) if f.detector == TOY]
    assert rests_on.mode_run_hints()["FM-2.3"] == ("claimed_success",)
    (q,) = qualify([f], run)
    assert q.confidence == round(f.confidence * DERIVED_CONFIDENCE, 3)
    assert "claimed, read from its last answer" in q.explanation
    unregister(TOY)
    assert qualify([f], run) == [f]  # declared by no detector now: nothing to qualify on


def test_a_registered_detectors_live_fields_guard_the_reuse_of_live_work(rb, toy) -> None:
    run, wander, _ = _wandering_run(rb)
    config = DetectionConfig()
    live = LiveDetection(config)
    for span in sorted(run.spans, key=lambda s: s.end_ns):
        live.observe(span)
    assert live.saw(run.steps, config)
    wander.tool_result = "derived after it was observed"
    assert not live.saw(run.steps, config)  # a field only the toy's tracker reads


@pytest.mark.parametrize("change, problem", [
    ({"name": "repetition"}, "registered already"),
    ({"modes": ("FM-9.9",)}, "taxonomy modes"),
    ({"run_hints": ("claimed",)}, "not RunHints fields"),
    ({"decisive": ("last",)}, "are not among"),
    ({"live_fields": ("tool_output",)}, "not Span fields"),
    ({"make_tracker": None}, "without a live tracker"),
])
def test_a_declaration_that_names_what_does_not_exist_is_refused(change, problem) -> None:
    with pytest.raises(ValueError, match=problem):
        register(dataclasses.replace(TOY_DETECTOR, **change))
    assert TOY not in {d.name for d in registry().detectors}
