"""The processor as components: exporters switched by config, the lifecycle, failure isolation.

The headline case is a YAML file with two OTLP exporters, the store off and the web view off:
the processor starts, diagnoses, serves right ``/metrics`` and re-exports to both receivers,
which are real: a second mast-otel processor (our own OTLP/HTTP receiver) and a plain HTTP
server decoding the body with the opentelemetry-proto classes. The sender is the OTel SDK's
own OTLP/HTTP exporter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

from mast_otel.wire import attributes as A
from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.component import Lifecycle
from mast_otel.processors.service.server import ProcessorServer
from tests.service.support import emit_run, make_config, metric, provider_for, running, wait_for
from tests.service.test_reexport import _attrs, http_sink  # noqa: F401  (a fixture)


def _yaml_config(tmp_path, endpoints: list[str]) -> ProcessorConfig:
    otlp = "\n".join(f"    - endpoint: {e}" for e in endpoints)
    path = tmp_path / "processor.yaml"
    path.write_text(textwrap.dedent("""\
        receiver: {host: 127.0.0.1, http_port: 0, grpc_enabled: false}
        assembly: {grace_seconds: 0.2, sweep_interval_seconds: 0.05, retention_seconds: 30}
        store: {enabled: false, path: %s}
        web: {enabled: false}
        exporters:
          otlp:
        """) % (tmp_path / "never.sqlite") + otlp + "\n")
    return ProcessorConfig.load(path)


def test_two_otlp_exporters_store_off_web_off(tmp_path, http_sink):  # noqa: F811
    sink, sink_exporter = http_sink
    downstream = running(make_config(tmp_path / "downstream"))  # our own receiver, store on
    with downstream as receiver:
        config = _yaml_config(tmp_path, [f"{receiver.http_url}/v1/traces", sink_exporter["endpoint"]])
        assert config.store.enabled is False and config.web.enabled is False and len(config.exporters.otlp) == 2
        with running(config) as server:
            assert server.store is None
            provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
            trace_id, ids = emit_run(provider, tools=(("kubectl_logs", "same"),) * 3)
            provider.force_flush()
            wait_for(lambda: metric(server, "mast_traces_total") == 1)
            assert metric(server, "mast_failure_mode_traces_total", mode="FM-1.3", source="rules") == 1

            # Late spans re-diagnose the run: with no store, still counted once per run and mode.
            tracer = provider.get_tracer("tests.service")
            from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

            parent = set_span_in_context(NonRecordingSpan(SpanContext(int(trace_id, 16), int(ids["agent"], 16), True,
                                                                      TraceFlags(1))))
            tracer.start_span("execute_tool kubectl_logs", context=parent, attributes={
                A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL, A.GEN_AI_TOOL_NAME: "kubectl_logs",
                A.MAST_TOOL_ARGS_HASH: "same", A.MAST_TOOL_RESULT_HASH: "r-same"}).end()
            provider.force_flush()
            wait_for(lambda: metric(server, "mast_late_spans_total", reason="rediagnosed") == 1)
            wait_for(lambda: metric(server, "mast_traces_completed_total") == 2)
            assert metric(server, "mast_traces_total") == 1
            assert metric(server, "mast_failure_mode_traces_total", mode="FM-1.3") == 1

            # Re-exported to both: the proto-decoding receiver sees the enrichment ...
            wait_for(lambda: ids["agent"] in sink.spans())
            root = _attrs(sink.spans()[ids["agent"]][2])
            assert root[A.MAST_FAILURE_MODES] == ["FM-1.3"]
            # ... and the downstream processor received the whole run and diagnosed it itself.
            d = wait_for(lambda: receiver.store.get(trace_id))
            assert d.span_count >= 7 and "FM-1.3" in d.modes
            # One mast_exported_spans_total series per endpoint, each counting what reached it.
            def exported(endpoint: str, at_least: int) -> float:
                return wait_for(lambda: (n := metric(server, "mast_exported_spans_total", endpoint=endpoint)) >= at_least and n)

            to_sink = exported(sink_exporter["endpoint"], len(sink.spans()))
            to_receiver = exported(f"{receiver.http_url}/v1/traces", d.span_count)
            assert metric(server, "mast_exported_spans_total") == to_sink + to_receiver

            # With the store off the API answers from recent diagnoses in memory; the web view is not mounted.
            served = httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}", params={"include": "steps"})
            body = served.json()
            assert served.status_code == 200 and [m["mode"] for m in body["modes"]] == ["FM-1.3"] and body["revision"] == 1
            assert ids["agent"] in {step["span_id"] for step in body["steps"]}
            assert httpx.get(f"{server.http_url}/v1/diagnoses", params={"mode": "FM-1.3"}).json()["total"] == 1
            assert httpx.get(f"{server.http_url}/v1/diagnoses/{'0' * 32}").status_code == 404
            assert httpx.get(f"{server.http_url}/").status_code == 404
            provider.shutdown()
        assert metric_text_after_shutdown_is_gone(server)
    assert not (tmp_path / "never.sqlite").exists()


def metric_text_after_shutdown_is_gone(server: ProcessorServer) -> bool:
    try:
        httpx.get(f"{server.http_url}/metrics", timeout=1)
    except httpx.TransportError:
        return True
    return False


def test_the_web_view_is_mounted_once_and_switchable(tmp_path):
    with running(make_config(tmp_path)) as server:
        def paths(routes) -> list[str]:  # included routers nest (FastAPI keeps them as their own route objects)
            out = []
            for route in routes:
                nested = getattr(route, "original_router", None)
                out += paths(nested.routes) if nested is not None else [getattr(route, "path", "")]
            return out

        found = paths(server._http.app.routes)
        assert found.count("/") == 1 and found.count("/runs/{trace_id}") == 1
        assert httpx.get(f"{server.http_url}/").status_code == 200
    with running(make_config(tmp_path / "off", web={"enabled": False})) as server:
        assert httpx.get(f"{server.http_url}/").status_code == 404
    with running(make_config(tmp_path / "bare"), builtin_components=False) as server:
        assert httpx.get(f"{server.http_url}/").status_code == 404


class _Recorder(Lifecycle):
    def __init__(self, log: list[str], name: str, fail: bool = False) -> None:
        self.log, self.name, self.fail = log, name, fail

    def _start(self) -> None:
        self.log.append(f"start {self.name}")
        if self.fail:
            raise OSError("port in use")

    def _shutdown(self, timeout: float) -> None:
        self.log.append(f"shutdown {self.name}")


def test_lifecycle_is_idempotent_and_safe_unstarted():
    log: list[str] = []
    c = _Recorder(log, "a")
    c.shutdown()  # never started: nothing to do
    c.start()
    c.start()
    c.shutdown(1.0)
    c.shutdown(1.0)
    assert log == ["start a", "shutdown a"]
    c.start()  # shut down for good
    assert log == ["start a", "shutdown a"]


def test_a_failed_start_shuts_down_what_started(tmp_path):
    log: list[str] = []
    server = ProcessorServer(make_config(tmp_path), builtin_components=False)
    server.add_component(_Recorder(log, "ok"))
    server.add_component(_Recorder(log, "broken", fail=True))
    with pytest.raises(OSError):
        server.start()
    assert log == ["start ok", "start broken", "shutdown broken", "shutdown ok"]
    assert not server.ingest.running and server.http_port is None  # nothing left behind
    server.stop()  # safe after a failed start


class _Broken(Lifecycle):
    name = "broken"

    def __init__(self, bad: str) -> None:
        self.bad, self.seen = bad, []

    def export(self, batch) -> None:
        if any(item.trace_id == self.bad for item in batch.runs):
            raise RuntimeError("cannot export this one")
        self.seen += [item.trace_id for item in batch.runs]


def test_a_failure_finishing_one_run_affects_only_that_run(tmp_path):
    config = make_config(tmp_path, assembly={"grace_seconds": 0.2, "sweep_interval_seconds": 600})
    with running(config, builtin_components=False) as server:
        pipeline = server.ingest
        provider = provider_for(HttpExporter(endpoint=f"{server.http_url}/v1/traces"))
        good, _ = emit_run(provider)
        other, _ = emit_run(provider, agent="planner")
        provider.shutdown()
        wait_for(lambda: pipeline.in_flight == 2)
        broken = _Broken(other)
        pipeline.add_exporter(broken)
        time.sleep(0.5)  # both past their grace: one sweep finishes them in one batch
        assert pipeline.sweep() == 2
        assert server.store.get(good) is not None and server.store.get(other) is not None  # the store got both
        assert broken.seen == [good]  # the broken exporter lost only the run it failed on
        assert metric(server, "mast_finish_errors_total", stage="broken") == 1
        assert metric(server, "mast_traces_total") == 2


def test_deprecated_single_exporter_section_maps_onto_the_list(tmp_path):
    with pytest.warns(FutureWarning, match="exporters.otlp"):
        config = ProcessorConfig(exporter={"endpoint": "http://a:4318/v1/traces"},
                                 exporters={"otlp": [{"endpoint": "http://b:4318/v1/traces"}]})
    assert [e.endpoint for e in config.exporters.otlp] == ["http://a:4318/v1/traces", "http://b:4318/v1/traces"]
    assert config.exporter is None
    assert ProcessorConfig(exporter={"endpoint": None}).exporters.otlp == []


def test_deprecated_environment_variable_still_works(monkeypatch):
    monkeypatch.setenv("MAST_OTEL_EXPORTER__ENDPOINT", "http://env:4318/v1/traces")
    with pytest.warns(FutureWarning):
        config = ProcessorConfig()
    assert [e.endpoint for e in config.exporters.otlp] == ["http://env:4318/v1/traces"]


def test_serve_with_two_export_endpoints_parses(tmp_path):
    code = ("import argparse, sys; from mast_otel.processors import serve; p = argparse.ArgumentParser(); "
            "serve.add_arguments(p); c = serve.load_config(p.parse_args(sys.argv[1:])); "
            "print(','.join(e.endpoint for e in c.exporters.otlp))")
    out = subprocess.run([sys.executable, "-c", code, "--export-endpoint", "http://a/v1/traces", "--export-endpoint",
                          "http://b/v1/traces"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "http://a/v1/traces,http://b/v1/traces"
