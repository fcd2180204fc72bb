"""Drive the demo agent through the real instrumentation and the real detectors, in process."""

from __future__ import annotations

import random
from dataclasses import dataclass, fields

import pytest


@dataclass
class Worked:
    result: object
    modes: dict[str, str | None]  # mode -> the guard that prevented it
    tools: list[tuple[str, str | None]]  # (tool, guard action on it) in start order
    termination: str | None


@pytest.fixture(scope="module")  # per module: other tests (the demo command) configure tracing too
def planted_run():
    """``planted_run(temper, scenario, guarded)``: one incident by sim-frontier whose slips are exactly the
    temperament flags given (every other slip off), diagnosed by the real detectors."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mast_otel.instrumentation import configure, instrument_litellm
    from mast_otel.instrumentation.guards import GuardConfig
    from mast_otel.demo.agent import make_model, run_incident
    from mast_otel.demo.models import Temperament
    from mast_otel.processors.detectors import diagnose
    from mast_otel.processors.ingest.decode import decode_protobuf
    from mast_otel.processors.model import Role, Run
    from mast_otel.processors.attribution import build_diagnosis

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    configure(tracer_provider=provider, capture_content=True)
    instrument_litellm()

    def run(temper: dict[str, object], scenario, guarded: bool, seed: int = 3) -> Worked:
        memory.clear()
        model = make_model("sim-frontier", random.Random(seed))
        slips = {f.name: False for f in fields(Temperament)} | {"after_failed_check": "retry"}
        for name, value in {**slips, **temper}.items():
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
