"""The optional webhook exporter, against a real HTTP server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

from tests.service.support import emit_run, make_config, metric, provider_for, running, wait_for


def test_webhook_posts_runs_with_failure_modes(tmp_path):
    received: list[tuple[dict, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append((body, self.headers.get("Authorization", "")))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        config = make_config(tmp_path, exporters={"webhook": {"enabled": True, "url": url, "headers": {"Authorization": "Bearer t"}}})
        with running(config) as processor:
            provider = provider_for(HttpExporter(endpoint=f"{processor.http_url}/v1/traces"))
            failing, _ = emit_run(provider, tools=(("kubectl_logs", "same"),) * 3)
            clean, _ = emit_run(provider)
            provider.shutdown()
            wait_for(lambda: processor.store.get(failing) and processor.store.get(clean))
            wait_for(lambda: metric(processor, "mast_webhook_notifications_total", status="sent") == 1)
        (body, auth), = received
        assert body["trace_id"] == failing and body["modes"] == ["FM-1.3"] and auth == "Bearer t"
    finally:
        server.shutdown()
