"""Enriched spans re-exported over OTLP to tiny sinks the test runs (HTTP and gRPC)."""

from __future__ import annotations

import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse

from mast_otel.wire import attributes as A
from mast_otel.processors.model import Finding
from tests.service.support import emit_run, make_config, metric, provider_for, running, wait_for


class Sink:
    """Collects the ExportTraceServiceRequests it receives."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.lock = threading.Lock()

    def add(self, body: bytes) -> None:
        with self.lock:
            self.requests.append(ExportTraceServiceRequest.FromString(body))

    def spans(self) -> dict[str, tuple]:
        """span id -> (resource attributes, span) for every span received (last copy wins)."""
        out = {}
        with self.lock:
            for req in self.requests:
                for rs in req.resource_spans:
                    resource = {kv.key: kv.value.string_value for kv in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        for span in ss.spans:
                            out[span.span_id.hex()] = (resource, ss.scope.name, span)
        return out


@pytest.fixture
def http_sink():
    sink = Sink()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            sink.add(self.rfile.read(int(self.headers["Content-Length"])))
            body = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield sink, {"endpoint": f"http://127.0.0.1:{server.server_address[1]}/v1/traces", "protocol": "http/protobuf"}
    server.shutdown()


@pytest.fixture
def grpc_sink():
    sink = Sink()

    def export(body, context):
        sink.add(body)
        return ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.unary_unary_rpc_method_handler(export, request_deserializer=None, response_serializer=ExportTraceServiceResponse.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("opentelemetry.proto.collector.trace.v1.TraceService", {"Export": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield sink, {"endpoint": f"grpc://127.0.0.1:{port}", "protocol": "grpc"}
    server.stop(0)


def _attrs(holder) -> dict:
    out = {}
    for kv in holder.attributes:
        v = kv.value
        kind = v.WhichOneof("value")
        out[kv.key] = [getattr(x, x.WhichOneof("value")) for x in v.array_value.values] if kind == "array_value" else getattr(v, kind)
    return out


@pytest.mark.parametrize("sink_fixture", ["http_sink", "grpc_sink"])
def test_enriched_spans_reach_the_backend(tmp_path, request, sink_fixture):
    sink, exporter = request.getfixturevalue(sink_fixture)
    config = make_config(tmp_path, exporters={"otlp": [exporter]})
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        tracer = provider.get_tracer("wrapper")
        with tracer.start_as_current_span("GET /healthz") as plain:  # not agent-related: passed through
            pass
        trace_id, ids = emit_run(provider, tools=(("kubectl_logs", "same"),) * 3)
        provider.shutdown()
        wait_for(lambda: server.store.get(trace_id))
        wait_for(lambda: len(sink.spans()) == 8)
        spans = sink.spans()
        assert format(plain.get_span_context().span_id, "016x") in spans  # pass-through, untouched
        resource, scope, root = spans[ids["agent"]]
        assert resource["service.name"] == "sre-agent" and scope == "tests.service"
        root_attrs = _attrs(root)
        assert root_attrs[A.MAST_FAILURE_MODES] == ["FM-1.3"] and root_attrs[A.MAST_FAILURE_MODE_COUNT] == 1
        assert root_attrs[A.MAST_FATAL] is False and root_attrs[A.MAST_DIAGNOSIS_SOURCES] == ["rules"]
        assert root_attrs[A.GEN_AI_AGENT_NAME] == "triage"  # the original attributes are kept
        assert A.MAST_ATTRIBUTION_AGENT not in root_attrs  # not failed, nothing fatal: no attribution
        anchor = spans[ids["tool-0"]][2]
        (event,) = anchor.events
        ev = _attrs(event)
        assert event.name == A.EVENT_EVALUATION_RESULT and ev[A.GEN_AI_EVALUATION_NAME] == "mast.FM-1.3"
        assert ev[A.GEN_AI_EVALUATION_SCORE_LABEL] == "detected" and ev[A.GEN_AI_EVALUATION_SCORE_VALUE] == pytest.approx(0.9)
        assert ev[A.MAST_EVIDENCE_SPAN_IDS] == [ids["tool-0"], ids["tool-1"], ids["tool-2"]]
        assert "kubectl_logs" in ev[A.GEN_AI_EVALUATION_EXPLANATION]
        assert all(not s.events for sid, (_, _, s) in spans.items() if sid != ids["tool-0"])
        assert metric(server, "mast_exported_spans_total") == 8

        # Judge findings merged later: counted once under "judge", re-exported on the root.
        judge = Finding("FM-2.3", 0.6, "drifted to another namespace", (ids["chat-1"],), source="judge", detector="judge",
                        prompt_version="prompt-2.schema-1")
        d = server.ingest.apply_findings(trace_id, [judge])
        assert d.modes == ["FM-1.3", "FM-2.3"] and d.fatal and d.revision == 1 and d.sources == ["judge", "rules"]
        assert server.ingest.apply_findings(trace_id, [judge]).revision == 1  # nothing new: unchanged
        assert metric(server, "mast_failure_mode_traces_total", mode="FM-2.3", source="judge", severity="fatal") == 1
        wait_for(lambda: _attrs(sink.spans()[ids["agent"]][2])[A.MAST_FAILURE_MODES] == ["FM-1.3", "FM-2.3"])
        judged = _attrs(sink.spans()[ids["chat-1"]][2].events[0])
        assert judged[A.GEN_AI_EVALUATION_NAME] == "mast.FM-2.3" and judged[A.MAST_JUDGE_PROMPT_VERSION] == "prompt-2.schema-1"
        assert server.store.get(trace_id).findings[-1].prompt_version == "prompt-2.schema-1"
        # the fatal judge finding is the only fatal one: the run is attributed to its step
        root_attrs = _attrs(sink.spans()[ids["agent"]][2])
        assert (root_attrs[A.MAST_ATTRIBUTION_AGENT], root_attrs[A.MAST_ATTRIBUTION_STEP_SPAN_ID],
                root_attrs[A.MAST_ATTRIBUTION_SOURCE]) == ("triage", ids["chat-1"], "judge")
        stored = server.store.get(trace_id).attribution
        assert (stored.agent, stored.step_span_id, stored.mode) == ("triage", ids["chat-1"], "FM-2.3")


def test_unreachable_backend_never_blocks_ingest(tmp_path):
    config = make_config(tmp_path, exporters={"otlp": [{"endpoint": "http://127.0.0.1:9/v1/traces", "queue_size": 1, "timeout_seconds": 0.5}]})
    with running(config) as server:
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        trace_ids = [emit_run(provider)[0] for _ in range(4)]
        provider.shutdown()
        wait_for(lambda: all(server.store.get(t) for t in trace_ids))
        wait_for(lambda: metric(server, "mast_export_dropped_spans_total", reason="queue_full") > 0)


@pytest.fixture
def refusing_http_sink():
    """A backend that refuses every export with 400 and says why, as Tempo does for a bad request."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            body = b"trace ids must be 16 bytes\n(request refused)"
            self.send_response(400)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"endpoint": f"http://127.0.0.1:{server.server_address[1]}/v1/traces", "protocol": "http/protobuf"}, \
        "HTTP 400 Bad Request: trace ids must be 16 bytes (request refused)"
    server.shutdown()


@pytest.fixture
def refusing_grpc_sink():
    def export(body, context):
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "trace ids must be 16 bytes")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.unary_unary_rpc_method_handler(export, request_deserializer=None, response_serializer=ExportTraceServiceResponse.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("opentelemetry.proto.collector.trace.v1.TraceService", {"Export": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield {"endpoint": f"grpc://127.0.0.1:{port}", "protocol": "grpc"}, "gRPC INVALID_ARGUMENT: trace ids must be 16 bytes"
    server.stop(0)


@pytest.mark.parametrize("sink_fixture", ["refusing_http_sink", "refusing_grpc_sink"])
def test_a_failed_re_export_says_why_it_failed(request, caplog, sink_fixture):
    from mast_otel.processors.config import ExporterConfig
    from mast_otel.processors.service.telemetry.metrics import Metrics
    from mast_otel.processors.service.outputs.otlp_reexport import OTLPReexporter

    exporter, reason = request.getfixturevalue(sink_fixture)
    reexporter = OTLPReexporter(ExporterConfig(**exporter), Metrics())
    reexporter.start()
    with caplog.at_level("WARNING", logger="mast_otel"):
        reexporter.submit_encoded(ExportTraceServiceRequest().SerializeToString(), 3)
        reexporter.stop()
    (warning,) = [r.getMessage() for r in caplog.records if "dropping" in r.getMessage()]
    assert warning.startswith("dropping 3 enriched spans after 1 failed re-export attempt(s)")
    assert warning.endswith(f"{exporter['endpoint']}: {reason}"), warning
