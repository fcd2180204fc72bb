"""``mast-otel serve`` as a user runs it: YAML config, ephemeral ports, SIGTERM flushes."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from tests.service.support import emit_run, provider_for, wait_for


def test_serve_runs_from_a_config_file_and_flushes_on_sigterm(tmp_path):
    store = tmp_path / "d.sqlite"
    (tmp_path / "mast.yaml").write_text(
        "receiver: {host: 127.0.0.1, grpc_port: 0, api_token: s3cret-token}\n"
        "assembly: {grace_seconds: 0.2, sweep_interval_seconds: 0.05}\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "mast_otel.processors.cli", "serve", "--config", str(tmp_path / "mast.yaml"),
         "--http-port", "0", "--store", str(store), "--log-level", "DEBUG"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        seen = []
        while not (match := re.search(r"ready: OTLP/HTTP \+ API (http://127\.0\.0\.1:\d+)", seen[-1] if seen else "")):
            line = proc.stdout.readline()
            assert line, "".join(seen)  # exited before it was ready
            seen.append(line)
        url = match.group(1)
        assert httpx.get(f"{url}/readyz").status_code == 200
        provider = provider_for(HttpExporter(endpoint=f"{url}/v1/traces"))
        done, _ = emit_run(provider)
        open_run, _ = emit_run(provider, end_root=False)
        provider.shutdown()
        headers = {"Authorization": "Bearer s3cret-token"}
        wait_for(lambda: httpx.get(f"{url}/v1/diagnoses/{done}", headers=headers).status_code == 200)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output
    output = "".join(seen) + output
    assert "flushing" in output and "s3cret-token" not in output
    flushed = DiagnosisStore(store)
    assert flushed.get(open_run).completion == "shutdown"
    flushed.close()


def _serve_until_ready(tmp_path, *flags: str) -> tuple[str, str]:
    """Start ``serve`` on free ports with ``flags``; (the ready line's URL, the log so far), then SIGTERM."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mast_otel.processors.cli", "serve", "--http-port", "0", "--no-grpc",
         "--store", str(tmp_path / "d.sqlite"), *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        seen = []
        while not (match := re.search(r"ready: OTLP/HTTP \+ API (\S+),", seen[-1] if seen else "")):
            line = proc.stdout.readline()
            assert line, "".join(seen)
            seen.append(line)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return match.group(1), "".join(seen)


def test_serve_listens_on_loopback_unless_told_otherwise(tmp_path):
    url, log = _serve_until_ready(tmp_path)
    assert url.startswith("http://127.0.0.1:") and "WARNING" not in log
    _, exposed = _serve_until_ready(tmp_path, "--host", "0.0.0.0")
    assert "WARNING" in exposed and "all interfaces" in exposed and "api_token" in exposed


def test_the_ready_line_names_the_store_and_the_log_folder(tmp_path):
    """One line says what is in use: the listeners, the SQLite file and the log folder (absolute)."""
    _, log = _serve_until_ready(tmp_path)
    [line] = [x for x in log.splitlines() if "ready: OTLP/HTTP" in x]
    assert line.endswith(f"; store {tmp_path / 'd.sqlite'}, log folder {tmp_path / 'd.wal'}"), line


def test_serve_on_all_interfaces_with_an_api_token_does_not_warn(tmp_path, monkeypatch):
    monkeypatch.setenv("MAST_OTEL_RECEIVER__API_TOKEN", "t0ken")
    _, log = _serve_until_ready(tmp_path, "--host", "0.0.0.0")
    assert "WARNING" not in log and "t0ken" not in log


_OWN_SPANS = """
import json, sys, tempfile, httpx
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.service.server import ProcessorServer

spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(provider)  # as a library in the processor's process might
config = ProcessorConfig(receiver={"host": "127.0.0.1", "http_port": 0, "grpc_enabled": False},
                         store={"path": tempfile.mkdtemp() + "/s.sqlite"}, wal={"enabled": False})
with ProcessorServer(config) as server:
    statuses = [httpx.get(server.http_url + "/v1/diagnoses").status_code,
                httpx.post(server.http_url + "/v1/traces", content=b"", headers={"Content-Type": "application/x-protobuf"}).status_code]
print(json.dumps({"statuses": statuses, "spans": [s.name for s in spans.get_finished_spans()]}))
"""


def test_the_processor_does_not_trace_its_own_requests():
    """A tracer provider set globally in the processor's process (by a library) gets no spans of
    the processor's own HTTP requests."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _OWN_SPANS], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["statuses"] == [200, 200] and report["spans"] == []


def test_the_serve_log_carries_no_client_info_lines_per_judge_call(capfd, caplog):
    """litellm logs two INFO lines per call (and httpx one per request): at serve's INFO level the
    log must carry the service's own lines, not those."""
    import logging

    import litellm

    from mast_otel.processors.serve import CLIENT_LOGGERS, configure_logging

    saved = {name: logging.getLogger(name).level for name in CLIENT_LOGGERS}
    try:
        configure_logging("INFO")
        capfd.readouterr()
        with caplog.at_level(logging.INFO):
            litellm.completion(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "judge this run"}],
                               mock_response='{"verdicts": []}')
        err = capfd.readouterr().err
        assert "LiteLLM" not in err and "success_handler" not in err, err
        assert not [r for r in caplog.records if r.name.startswith(("LiteLLM", "httpx", "openai")) and r.levelno < logging.WARNING]
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)
