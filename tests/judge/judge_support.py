"""Helpers for the judge tests: runs carrying secrets, and a local OpenAI-compatible server.

The server implements ``POST /v1/chat/completions`` on 127.0.0.1 (ephemeral port), records
every request body, and answers according to a script of behaviours: ``ok`` (a valid
assessment citing the run's real step ids), ``malformed``, ``unknown_step``, ``truncated``,
``slow``, ``429`` and ``500``. When the script runs out it answers ``ok``. A session's prompt
(step ids ``Tk.Sn``) gets ``ok`` as a cross-turn verdict: FM-1.4 citing the first step of the
first turn and the last step of the last turn, and FM-3.3 on the last step alone.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mast_otel.processors import taxonomy  # noqa: E402
from mast_otel.processors.model import Role, Run, RunHints, Span  # noqa: E402

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"

# Every secret the fixture run carries; none of them may reach the judge's provider.
SECRETS = {
    "openai": "sk-proj-Abc123Def456Ghi789Jkl012Mno345",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github": "ghp_1234567890abcdefghijABCDEFGHIJ123456",
    "slack": "xoxb-123456789012-abcdefABCDEF",
    "google": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    "bearer": "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5",
    "url_password": "hunter2secret",
    "conn_password": "S3cr3t!pass",
    "generic_token": "abcd1234efgh5678ijkl9012",
    "email": "oncall.engineer@example.com",
    "private_key": "MIIEowIBAAKCAQEA7bq9secretkeymaterial",
    "custom": "CUST-998877",
}

SECRET_TEXT = (
    f"export OPENAI_API_KEY={SECRETS['openai']}; aws key {SECRETS['aws']}; gh {SECRETS['github']}; "
    f"slack {SECRETS['slack']}; google {SECRETS['google']}; session {SECRETS['jwt']}; "
    f"curl -H 'Authorization: Bearer {SECRETS['bearer']}' "
    f"postgres://admin:{SECRETS['url_password']}@db.internal:5432/app "
    f"Server=db;User Id=sa;Password={SECRETS['conn_password']}; "
    f"auth_token={SECRETS['generic_token']} mail {SECRETS['email']} customer {SECRETS['custom']}\n"
    f"-----BEGIN RSA PRIVATE KEY-----\n{SECRETS['private_key']}\n-----END RSA PRIVATE KEY-----"
)


def _span(i: int, role: Role, parent: str | None, **kw: Any) -> Span:
    return Span(
        trace_id=TRACE_ID,
        span_id=f"{i:016x}",
        parent_span_id=parent,
        name=kw.pop("name", role.value),
        start_ns=1_000_000_000 * i,
        end_ns=1_000_000_000 * i + 500_000_000,
        role=role,
        **kw,
    )


def make_run(steps: int = 4, *, content: bool = True, secret: bool = True, trace_id: str = TRACE_ID) -> Run:
    """An SRE agent run: alternating model and tool calls, a failed verification at the end."""
    text = SECRET_TEXT if secret else "kubectl get pods -n payments"
    root = _span(
        0,
        Role.AGENT,
        None,
        name="invoke_agent triage",
        agent_name="triage",
        hints=RunHints(
            max_steps=20,
            constraints=("read_only",),
            termination_reason="final_answer",
            claimed_success=True,
            outcome="failure",
            task=("Find why the payments pods crash. " + text) if content else None,
            final_answer="Fixed: restarted the deployment." if content else None,
        ),
    )
    spans = [root]
    for i in range(1, steps + 1):
        if i % 2:
            spans.append(
                _span(i, Role.LLM, root.span_id, model="gpt-4o-mini", input_message_count=i + 1,
                      input_text=f"step {i} context {text}" if content else None,
                      output_text=f"I will inspect the pods (step {i})." if content else None)
            )
        else:
            last = i == steps
            spans.append(
                _span(i, Role.TOOL, root.span_id, tool_name="kubectl_verify" if last else "kubectl_get",
                      tool_kind="verify" if last else "read", args_hash=f"{i:016x}",
                      verification_passed=False if last else None,
                      tool_args=f'{{"cmd": "get pods", "env": "{text}"}}' if content else None,
                      tool_result=f"pod crashloop {text}" if content else None)
            )
    for s in spans:
        s.trace_id = trace_id
    return Run.from_spans(trace_id, spans, completion="root_ended")


def assessment(detected: dict[str, list[str]] | None = None, *, skip: str | None = None) -> dict[str, Any]:
    """A full answer; ``detected`` maps mode -> cited step ids."""
    detected = detected or {}
    return {
        "modes": [
            {
                "mode": m,
                "detected": m in detected,
                "confidence": 0.9 if m in detected else 0.1,
                "steps": detected.get(m, []),
                "rationale": f"{m} shown at {', '.join(detected[m])}." if m in detected else "Not shown.",
            }
            for m in taxonomy.MODE_IDS
            if m != skip
        ]
    }


class JudgeServer:
    """A local OpenAI-compatible chat completions endpoint with scripted misbehaviour."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[str] = []
        self.slow_seconds = 2.0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with server.lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body.decode()})
                    action = server.script.pop(0) if server.script else "ok"
                server.answer(self, json.loads(body), action, self.headers.get("authorization", ""))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def bodies(self) -> str:
        return "\n".join(r["body"] for r in self.requests)

    def answer(self, handler: BaseHTTPRequestHandler, request: dict[str, Any], action: str, auth: str) -> None:
        if action in ("429", "500"):
            # a careless provider that echoes the credentials it was sent
            error = {"message": f"scripted {action} for {auth}", "type": "server_error"}
            return _send(handler, int(action), {"error": error})
        if action == "slow":
            time.sleep(self.slow_seconds)
        steps = re.findall(r"^((?:T\d+\.)?S\d+) ", "\n".join(m["content"] for m in request["messages"]), re.M)
        first = steps[0] if steps else "S1"
        last = steps[-1] if steps else "S1"
        if first.startswith("T"):  # a session
            content = json.dumps(assessment({"FM-1.4": [first, last], "FM-3.3": [last]}))
        else:
            content = json.dumps(assessment({"FM-3.3": [last], "FM-2.3": [first]}))
        finish = "stop"
        if action == "malformed":
            content = "I think the run failed because of verification. {not json"
        elif action == "unknown_step":
            content = json.dumps(assessment({"FM-3.3": ["S999"]}))
        elif action == "truncated":
            content, finish = content[: len(content) // 2], "length"
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if request.get("tools"):
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": request["tools"][0]["function"]["name"], "arguments": content}}],
            }
        _send(handler, 200, {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "judge"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200},
        })


def _send(handler: BaseHTTPRequestHandler, code: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(code)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class NoLiveDetection:
    """Live detection that finds nothing: the judge tests see only what the judge says."""

    def __init__(self, config=None) -> None:
        pass

    def observe(self, span) -> list:
        return []
