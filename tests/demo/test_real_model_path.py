"""``--model``: the same agent drives a real model through litellm function calling (here a
local OpenAI-compatible server started by the test)."""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mast_otel.demo.agent import Scenario, make_model, run_incident

SCRIPT = [
    {"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "rollback_deployment",
                                                                  "arguments": '{"deployment": "checkout"}'}}]},
    {"tool_calls": [{"id": "c2", "type": "function", "function": {"name": "check_health",
                                                                  "arguments": '{"deployment": "checkout"}'}}]},
    {"content": "RESOLVED: checkout: bad image, rolled back, health check passed."},
]


def test_real_model_drives_the_agent(monkeypatch):
    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(body)
            step = SCRIPT[min(len(requests), len(SCRIPT)) - 1]
            message = {"role": "assistant", "content": step.get("content"), "tool_calls": step.get("tool_calls")}
            payload = json.dumps({
                "id": f"r{len(requests)}", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": message,
                             "finish_reason": "tool_calls" if step.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-local")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_port}/v1")
    monkeypatch.setenv("OPENAI_API_BASE", f"http://127.0.0.1:{server.server_port}/v1")
    try:
        result = run_incident(make_model("openai/local-model", random.Random(0)), Scenario("bad_image"), random.Random(0))
    finally:
        server.shutdown()
    assert result.outcome == "success" and result.claimed_success is True and result.steps == 3
    assert len(requests) == 3
    assert {t["function"]["name"] for t in requests[0]["tools"]} >= {"get_pods", "rollback_deployment", "check_health"}
    tool_messages = [m for m in requests[2]["messages"] if m["role"] == "tool"]
    assert json.loads(tool_messages[-1]["content"])["passed"] is True  # the model saw the true health state
