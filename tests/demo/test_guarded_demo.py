"""``mast-otel demo --guards``: slips planted in a simulated model's temperament, run the same way without and with
guards, are prevented (the runs' spans and diagnoses say so), and the command prints the comparison."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest


@dataclass
class Worked:
    result: object
    modes: dict[str, str | None]  # mode -> the guard that prevented it
    tools: list[tuple[str, str | None]]  # (tool, guard action on it) in start order
    termination: str | None


@pytest.fixture(scope="module")
def work():
    """``work(temper, scenario, guarded)``: one incident by sim-frontier with the temperament flags set."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mast_otel.instrumentation import configure, instrument_litellm
    from mast_otel.instrumentation.guards import GuardConfig
    from mast_otel.demo.agent import make_model, run_incident
    from mast_otel.processors.detectors import diagnose
    from mast_otel.processors.ingest.decode import decode_protobuf
    from mast_otel.processors.model import Role, Run, build_diagnosis

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    configure(tracer_provider=provider, capture_content=True)
    instrument_litellm()

    def run(temper: dict[str, object], scenario, guarded: bool, seed: int = 3) -> Worked:
        memory.clear()
        model = make_model("sim-frontier", random.Random(seed))
        for name, value in {"wrong_fix": False, "skip_verify": False, "recheck": False, "loop": False,
                            "overrun": False, "skip_clarify": False, "after_failed_check": "retry", **temper}.items():
            setattr(model._policy.temper, name, value)
        result = run_incident(model, scenario, random.Random(f"{seed}/cluster"),
                              guards=GuardConfig.all("enforce") if guarded else None)
        decoded = decode_protobuf(encode_spans(memory.get_finished_spans()).SerializeToString())
        spans = [s for s in decoded.spans if s.trace_id == result.trace_id and s.is_agent_related]
        built = Run.from_spans(result.trace_id, spans, completion="root_ended")
        d = build_diagnosis(built, diagnose(built))
        tools = [(s.tool_name, next((g.action for g in s.guard_interventions), None))
                 for s in sorted(spans, key=lambda s: s.start_ns) if s.role is Role.TOOL]
        return Worked(result, {f.mode: f.prevented_by for f in d.findings}, tools, built.hints.termination_reason)

    yield run
    provider.shutdown()
    configure(tracer_provider=None, capture_content=None)


def _scenario(**kwargs):
    from mast_otel.demo.agent import Scenario
    from mast_otel.demo.environment import INCIDENT_KINDS

    return Scenario(kind=INCIDENT_KINDS[0], **kwargs)


def test_acting_on_an_ambiguous_alert_without_asking_is_refused_until_the_model_asks(work):
    plain = work({"skip_clarify": True}, _scenario(ambiguous=True), guarded=False)
    guarded = work({"skip_clarify": True}, _scenario(ambiguous=True), guarded=True)
    plain_names = [name for name, _ in plain.tools]
    assert "ask_user" not in plain_names and "FM-2.2" in plain.modes and plain.modes["FM-2.2"] is None
    refused = next(i for i, (_, action) in enumerate(guarded.tools) if action == "blocked")
    assert "ask_user" in [name for name, _ in guarded.tools[refused:]]  # the model asked once refused
    assert guarded.modes.get("FM-2.2") == "clarify_or_read_only"
    assert guarded.result.outcome == "success"


def test_a_success_claim_without_a_check_is_refused_and_the_model_checks(work):
    plain = work({"skip_verify": True}, _scenario(), guarded=False)
    guarded = work({"skip_verify": True}, _scenario(), guarded=True)
    assert "FM-3.2" in plain.modes and "check_health" not in [name for name, _ in plain.tools]
    assert "FM-3.2" not in guarded.modes
    assert guarded.tools[-1][0] == "check_health" and guarded.result.claimed_success
    assert ("verification", "refused_finish") in guarded.result.interventions


def test_working_on_after_a_passing_check_ends_the_run_as_resolved(work):
    plain = work({"overrun": True}, _scenario(max_steps=14), guarded=False)
    guarded = work({"overrun": True}, _scenario(max_steps=14), guarded=True)
    assert len(plain.tools) > len(guarded.tools)
    assert ("budget", "stopped") in guarded.result.interventions
    assert guarded.termination == "final_answer" and guarded.result.claimed_success
    assert guarded.result.outcome == plain.result.outcome == "success"  # the guard ends it sooner, same result


def test_re_reading_the_same_logs_is_cut_short(work):
    plain = work({"loop": True}, _scenario(), guarded=False)
    guarded = work({"loop": True}, _scenario(), guarded=True)
    assert "FM-1.3" in plain.modes and plain.modes["FM-1.3"] is None
    assert ("get_logs", "blocked") in guarded.tools
    assert guarded.modes.get("FM-1.3") == "loop"
    assert guarded.result.outcome == "success"


def test_a_careful_run_is_not_touched(work):
    careful = work({}, _scenario(), guarded=True)
    assert careful.result.interventions == [] and careful.result.outcome == "success"


def test_demo_guards_prints_both_ways_side_by_side(tmp_path, capsys):
    import argparse
    import io

    from mast_otel.demo.command import _demo, add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--once", "--guards", "--runs", "3", "--port", "0", "--grpc-port", "0"])
    out, err = io.StringIO(), io.StringIO()
    assert _demo(args, tmp_path, out, err) == 0
    text = out.getvalue()
    assert "success w/o" in text and "success with" in text and "false interventions" in text
    assert "Runs whose outcome changed with guards:" in text
    for model in ("sim-frontier", "sim-flash", "sim-open"):
        assert model in text
    assert "18 of 18 runs diagnosed" in err.getvalue()  # 3 incidents x 3 models, both ways
