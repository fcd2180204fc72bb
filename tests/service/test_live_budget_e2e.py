"""A runaway run is reported live, under its agent's name, before its agent span is exported.

mast-otel's own instrumentation, the SDK's BatchSpanProcessor and real OTLP/HTTP exporter, the
real processor with the real detectors: the batch is flushed mid-run, while the agent is still
looping, and the live metric must already name the agent and the mode.
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from mast_otel.instrumentation import agent_run, configure, tool_call
from mast_otel.processors import detectors
from tests.service.support import make_config, metric, running, wait_for

BUDGET = 3
LOOPS = 6


def test_budget_overrun_is_counted_live_under_the_agent_before_the_run_ends(tmp_path) -> None:
    config = make_config(tmp_path, assembly={"grace_seconds": 0.1})
    with running(config, diagnose=detectors.diagnose, live_detection=detectors.LiveDetection) as server:
        provider = TracerProvider(resource=Resource.create({"service.name": "sre-agent"}))
        # a long schedule: nothing is exported unless flushed
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces"),
                                                       schedule_delay_millis=60_000))
        configure(tracer_provider=provider, capture_content=False)
        try:
            with agent_run("looper", max_steps=BUDGET) as run:
                for i in range(LOOPS):
                    run.next_step()
                    with tool_call("kubectl_get", kind="read", arguments={"pod": f"api-{i}"}) as call:
                        call.set_result(f"pod api-{i} CrashLoopBackOff")
                trace_id = format(run.span.get_span_context().trace_id, "032x")
                assert provider.force_flush()  # the steps so far; the agent span is still open
                live = wait_for(lambda: metric(server, "mast_live_detections_total", agent="looper", mode="FM-1.5",
                                               service_name="sre-agent"))
                assert live == 1
                assert metric(server, "mast_live_detections_total", agent="unknown") == 0
                assert server.store.get(trace_id) is None  # not diagnosed: the run is still going
            provider.force_flush()
            d = wait_for(lambda: server.store.get(trace_id))
        finally:
            configure(tracer_provider=None, capture_content=None)
            provider.shutdown()
        (confirmed,) = [f for f in d.findings if f.mode == "FM-1.5"]
        assert confirmed.live and f"budget of {BUDGET}" in confirmed.explanation  # raised live, then confirmed
        assert d.agent == "looper" and d.withdrawn == []
        assert metric(server, "mast_live_detections_total", agent="looper", mode="FM-1.5") == 1
