"""Real OTel SDK exporters (HTTP and gRPC) -> running processor -> diagnoses, metrics, API."""

from __future__ import annotations

import grpc
import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

from tests.service.support import emit_run, metric, provider_for, running, wait_for

LOOP = (("kubectl_logs", "same"),) * 3 + (("kubectl_get", "x"),)


def _diagnosis(server, trace_id):
    response = httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}")
    return response.json() if response.status_code == 200 else None


@pytest.mark.parametrize("protocol", ["http", "http-gzip", "grpc", "grpc-gzip"])
def test_runs_are_diagnosed_from_real_exporters(config, protocol):
    with running(config) as server:
        if protocol.startswith("grpc"):
            compression = grpc.Compression.Gzip if protocol == "grpc-gzip" else grpc.Compression.NoCompression
            exporter = GrpcExporter(endpoint=f"127.0.0.1:{server.grpc_port}", insecure=True, compression=compression)
        else:
            compression = Compression.Gzip if protocol == "http-gzip" else Compression.NoCompression
            exporter = HttpExporter(endpoint=f"{server.http_url}/v1/traces", compression=compression)
        provider = provider_for(exporter)
        looping, ids = emit_run(provider, tools=LOOP)
        clean, _ = emit_run(provider, agent="planner", model="claude-sonnet")
        provider.shutdown()

        d = wait_for(lambda: _diagnosis(server, looping))
        assert [m["mode"] for m in d["modes"]] == ["FM-1.3"]
        mode = d["modes"][0]
        assert mode["name"] == "Step repetition" and mode["severity"] == "recoverable"
        assert set(mode["evidence_span_ids"]) == {ids["tool-0"], ids["tool-1"], ids["tool-2"]}
        assert d["findings"][0]["live"] is True  # raised live, confirmed at completion
        assert d["root_span_id"] == ids["agent"] and d["agent"] == "triage" and d["model"] == "gpt-4o"
        assert d["service_name"] == "sre-agent" and d["completion"] == "root_ended"
        assert d["span_count"] == 9 and d["step_count"] == 8

        d2 = wait_for(lambda: _diagnosis(server, clean))
        assert d2["modes"] == [] and d2["fatal"] is False

        wire = protocol.split("-")[0]
        assert metric(server, "mast_spans_received_total", protocol=wire) == 9 + 5
        assert metric(server, "mast_traces_total") == 2
        assert metric(server, "mast_traces_total", agent="planner", model="claude-sonnet", service_name="sre-agent") == 1
        assert metric(server, "mast_failure_mode_traces_total", mode="FM-1.3", source="rules", mode_name="Step repetition",
                      category="FC1", severity="recoverable", agent="triage") == 1
        assert metric(server, "mast_live_detections_total", mode="FM-1.3") == 1
        assert metric(server, "mast_failure_modes_per_trace_count") == 2
        assert metric(server, "mast_failure_modes_per_trace_bucket", le="0.0") == 1
        assert metric(server, "mast_diagnosis_latency_seconds_count") == 2


def test_withdrawn_live_findings_stay_visible(config):
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_id, ids = emit_run(provider, tools=(("forbidden", "a"),))
        provider.shutdown()
        d = wait_for(lambda: _diagnosis(server, trace_id))
        assert d["modes"] == []  # the final diagnosis did not confirm it
        assert [(w["mode"], w["span_id"]) for w in d["withdrawn_live_findings"]] == [("FM-1.1", ids["tool-0"])]
        assert metric(server, "mast_live_detections_total", mode="FM-1.1") == 1
        assert metric(server, "mast_failure_mode_traces_total", mode="FM-1.1") == 0


def test_outcome_on_the_agent_span_counts_once_per_run_and_mode(config):
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_id, _ = emit_run(provider, tools=LOOP, outcome="failure")
        provider.shutdown()
        d = wait_for(lambda: _diagnosis(server, trace_id))
        assert d["outcome"] == "failure"
        assert metric(server, "mast_outcomes_total", outcome="failure") == 1
        assert metric(server, "mast_failure_mode_outcomes_total", mode="FM-1.3", outcome="failure", severity="recoverable") == 1
        # A second report of the same outcome changes nothing in the counters.
        r = httpx.post(f"{server.http_url}/v1/outcomes", json={"trace_id": trace_id, "outcome": "failure"})
        assert r.status_code == 200 and r.json()["status"] == "applied"
        assert metric(server, "mast_outcomes_total") == 1
        assert metric(server, "mast_failure_mode_outcomes_total") == 1


def test_trace_without_agent_span_completes_at_its_root(config):
    from mast_otel.wire import attributes as A

    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        tracer = provider.get_tracer("t")
        with tracer.start_as_current_span("handle request") as root:
            for _ in range(2):
                with tracer.start_as_current_span("chat gpt-4o", attributes={A.GEN_AI_OPERATION_NAME: "chat", A.GEN_AI_REQUEST_MODEL: "gpt-4o"}):
                    pass
        provider.shutdown()
        trace_id = format(root.get_span_context().trace_id, "032x")
        d = wait_for(lambda: _diagnosis(server, trace_id))
        assert d["completion"] == "root_ended" and d["root_span_id"] is None and d["model"] == "gpt-4o"
        assert d["span_count"] == 2
        assert metric(server, "mast_traces_completed_total", completion="root_ended") == 1


def test_the_real_detectors_by_default(config):
    with running(config, diagnose=None, live_detection=None) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_id, _ = emit_run(provider, tools=(("kubectl_logs", "same"),) * 4)
        provider.shutdown()
        d = wait_for(lambda: _diagnosis(server, trace_id))
        assert "FM-1.3" in [m["mode"] for m in d["modes"]]
        assert metric(server, "mast_live_detections_total", mode="FM-1.3") == 1
