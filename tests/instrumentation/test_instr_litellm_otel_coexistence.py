"""litellm's own OTel callback beside mast-otel's: the agent span stays an agent span."""

from __future__ import annotations

import time

import litellm
from litellm.integrations.opentelemetry import OpenTelemetry, OpenTelemetryConfig
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel.instrumentation import agent_run, configure, instrument_litellm


def test_agent_span_keeps_its_operation_when_litellm_writes_onto_it() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure(tracer_provider=provider, capture_content=False)
    instrument_litellm()
    theirs = OpenTelemetry(config=OpenTelemetryConfig(exporter=InMemorySpanExporter(), skip_set_global=True),
                           tracer_provider=provider)
    saved = litellm.callbacks
    litellm.callbacks = [*saved, theirs]
    try:
        with agent_run("triage", max_steps=3):
            litellm.completion(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}], mock_response="y")
            time.sleep(0.5)  # litellm logs from a worker thread; let it write before the run ends
    finally:
        litellm.callbacks = saved
        for name in ("success_callback", "failure_callback", "_async_success_callback", "_async_failure_callback"):
            setattr(litellm, name, [c for c in getattr(litellm, name) if c is not theirs])
    agent = next(s for s in exporter.get_finished_spans() if s.name == "invoke_agent triage")
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["mast.task.max_steps"] == 3
