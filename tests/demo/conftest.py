"""Drive the demo agent through the real instrumentation and the real detectors, in process."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest


@dataclass
class Diagnosed:
    model: str
    outcome: str
    modes: set[str]
    kind: str


@pytest.fixture(scope="session")
def diagnose_fleet():
    """``diagnose_fleet(model, n)``: run ``n`` incidents, export spans as OTLP protobuf, decode, diagnose."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mast_otel.instrumentation import configure, instrument_litellm
    from mast_otel.demo.agent import make_model, run_incident, scenarios
    from mast_otel.processors.detectors import diagnose
    from mast_otel.processors.ingest.decode import decode_protobuf
    from mast_otel.processors.model import Run

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    configure(tracer_provider=provider, capture_content=True)
    instrument_litellm()

    def run(model: str, n: int, seed: int = 11) -> list[Diagnosed]:
        out = []
        for i, scenario in enumerate(scenarios(n, random.Random(seed))):
            memory.clear()
            result = run_incident(make_model(model, random.Random(f"{seed}/{model}/{i}")), scenario,
                                  random.Random(f"{seed}/cluster/{i}"))
            decoded = decode_protobuf(encode_spans(memory.get_finished_spans()).SerializeToString())
            assert not decoded.rejected, decoded.rejected
            spans = [s for s in decoded.spans if s.trace_id == result.trace_id and s.is_agent_related]
            findings = diagnose(Run.from_spans(result.trace_id, spans, completion="root_ended"))
            out.append(Diagnosed(model, result.outcome, {f.mode for f in findings}, scenario.kind))
        return out

    yield run
    provider.shutdown()
