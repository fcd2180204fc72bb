"""``setup_tracing`` sends spans over real OTLP exporters to real servers started by the test."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel.instrumentation import agent_run, configure, setup_tracing, tool_call
from mast_otel.instrumentation.tracing import resolve_endpoint


class Collected:
    """Spans decoded from the OTLP requests one test server received."""

    def __init__(self) -> None:
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []

    def add(self, body: bytes) -> None:
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.requests.append(request)

    @property
    def spans(self) -> list:
        return [s for r in self.requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]

    def service_names(self) -> set[str]:
        return {a.value.string_value for r in self.requests for rs in r.resource_spans
                for a in rs.resource.attributes if a.key == "service.name"}


@pytest.fixture
def otlp_http():
    collected = Collected()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            collected.paths.append(self.path)
            collected.headers.append(dict(self.headers))
            collected.add(body)
            reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    collected.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield collected
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def reset_settings():
    yield
    configure(tracer_provider=None, capture_content=None)


def _attributes(span) -> dict:
    return {a.key: a.value for a in span.attributes}


def test_spans_arrive_over_otlp_http_next_to_the_apps_own_exporter(otlp_http):
    own = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(own))

    returned = setup_tracing(otlp_http.url, tracer_provider=provider, headers={"x-tenant": "sre"})
    assert returned is provider
    with agent_run("triage", max_steps=4, constraints=["read_only"]):
        with tool_call("kubectl_get", kind="read", arguments={"resource": "pods"}):
            pass
    assert provider.force_flush(5000)

    assert otlp_http.paths == ["/v1/traces"]
    assert otlp_http.headers[0].get("x-tenant") == "sre"
    received = {s.name: s for s in otlp_http.spans}
    assert set(received) == {"invoke_agent triage", "execute_tool kubectl_get"}
    agent, tool_span = received["invoke_agent triage"], received["execute_tool kubectl_get"]
    assert tool_span.parent_span_id == agent.span_id and tool_span.trace_id == agent.trace_id
    attrs = _attributes(agent)
    assert attrs["mast.task.max_steps"].int_value == 4
    assert [v.string_value for v in attrs["mast.task.constraints"].array_value.values] == ["read_only"]
    assert _attributes(tool_span)["mast.tool.kind"].string_value == "read"
    assert len(own.get_finished_spans()) == 2  # the application's own pipeline is untouched


def test_setup_is_idempotent(otlp_http):
    provider = TracerProvider()
    for _ in range(3):
        setup_tracing(otlp_http.url + "/v1/traces", tracer_provider=provider)
    with agent_run("triage"):
        pass
    provider.force_flush(5000)
    assert [s.name for s in otlp_http.spans] == ["invoke_agent triage"]
    provider.shutdown()


def test_grpc_exporter(otlp_http):
    grpc = pytest.importorskip("grpc")
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    collected = Collected()

    class Service(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):  # noqa: N802 - gRPC's naming
            collected.requests.append(request)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        provider = TracerProvider()
        setup_tracing(f"http://127.0.0.1:{port}", protocol="grpc", tracer_provider=provider)
        with agent_run("triage"):
            pass
        assert provider.force_flush(10000)
        assert [s.name for s in collected.spans] == ["invoke_agent triage"]
        provider.shutdown()
    finally:
        server.stop(None)


def test_endpoint_resolution(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert resolve_endpoint(None, "http/protobuf") == "http://localhost:4318/v1/traces"
    assert resolve_endpoint(None, "grpc") == "http://localhost:4317"
    assert resolve_endpoint("http://proc:4318/", "http/protobuf") == "http://proc:4318/v1/traces"
    assert resolve_endpoint("http://gw/otlp/traces", "http/protobuf") == "http://gw/otlp/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert resolve_endpoint(None, "http/protobuf") == "http://collector:4318/v1/traces"
    assert resolve_endpoint(None, "grpc") == "http://collector:4318"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:9999/custom")
    assert resolve_endpoint(None, "http/protobuf") == "http://traces:9999/custom"
    assert resolve_endpoint("http://arg:4318", "http/protobuf") == "http://arg:4318/v1/traces"


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="protocol must be one of http/protobuf, grpc"):
        setup_tracing("http://x", protocol="http/json")
    with pytest.raises(TypeError, match="must be an opentelemetry.sdk.trace.TracerProvider"):
        setup_tracing("http://x", tracer_provider=object())


def test_global_setup_from_environment_in_a_fresh_process(otlp_http):
    """No provider yet: one is created and set globally from OTEL_* variables; litellm, imported
    after the setup, is hooked when the run starts; spans are flushed at exit."""
    script = textwrap.dedent("""
        from opentelemetry import trace
        from mast_otel.instrumentation import agent_run, setup_tracing
        provider = setup_tracing()
        assert trace.get_tracer_provider() is provider
        assert setup_tracing() is provider
        import litellm
        with agent_run("from-env"):
            litellm.completion(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
                               mock_response="hello")
    """)
    env = dict(os.environ, OTEL_EXPORTER_OTLP_ENDPOINT=otlp_http.url, OTEL_SERVICE_NAME="sre-agent",
               LITELLM_LOCAL_MODEL_COST_MAP="True")
    env.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    names = sorted(s.name for s in otlp_http.spans)
    assert names == ["chat gpt-4o-mini", "invoke_agent from-env"]
    assert otlp_http.service_names() == {"sre-agent"}
