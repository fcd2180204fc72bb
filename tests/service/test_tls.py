"""TLS on both receivers, with a self-signed certificate made by openssl."""

from __future__ import annotations

import ssl
import subprocess

import grpc
import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.tools import require_tool
from tests.service.support import emit_run, make_config, provider_for, running, wait_for


def test_tls_on_http_and_grpc(tmp_path):
    openssl = require_tool("openssl")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    config = make_config(tmp_path, receiver={"tls": {"cert_file": str(cert), "key_file": str(key)}})
    trusted = ssl.create_default_context(cafile=str(cert))
    memory = InMemorySpanExporter()
    provider = provider_for(memory)
    over_http, _ = emit_run(provider)
    body = encode_spans(memory.get_finished_spans()).SerializeToString()
    with running(config) as server:
        assert server.http_url.startswith("https://")
        response = httpx.post(f"{server.http_url}/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"}, verify=trusted)
        assert response.status_code == 200
        credentials = grpc.ssl_channel_credentials(cert.read_bytes())
        with_grpc = provider_for(GrpcExporter(endpoint=f"localhost:{server.grpc_port}", credentials=credentials))
        over_grpc, _ = emit_run(with_grpc)
        with_grpc.shutdown()
        wait_for(lambda: server.store.get(over_http) and server.store.get(over_grpc))
        # Plain text is refused on the TLS port, and so is an untrusted certificate.
        with pytest.raises(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{server.http_port}/healthz")
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{server.http_url}/healthz")
