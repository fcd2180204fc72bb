"""The Vercel AI SDK 7 (TypeScript) conversation, recorded under Node: ``tests/sessions/typescript/session.mjs``.

    python -m tests.sessions.recorders.ai_sdk --out tests/sessions/corpus/ai-sdk [--no-content]

One Node process plays one session (the app keeps the message list, as AI SDK apps do). This
process serves what it talks to: the session stub model, the cluster as HTTP tools
(``POST /tools/<name>``), a turn marker (``POST /turn/<i>``: turn ``i`` starts, the scenario's
cluster change for it applies) and an OTLP/HTTP capture endpoint (``POST /v1/traces``, OTLP/JSON).
The files written are those of the Python recorders: ``<scenario>.json`` and ``manifest.json``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.frameworks.harness.cluster import Cluster
from tests.sessions.harness.scenarios import INSTRUCTIONS, SCENARIOS, SessionScenario
from tests.sessions.harness.session_model import SessionStubModel

NODE_APP = Path(__file__).resolve().parents[1] / "typescript"
_JSON_TYPES = {int: "integer", str: "string", bool: "boolean", float: "number"}
PACKAGES = ("ai", "@ai-sdk/otel", "@ai-sdk/openai", "@opentelemetry/sdk-trace-node")


class Sidecar:
    """The session's cluster as HTTP tools, its turn markers, and an OTLP/JSON capture endpoint."""

    def __init__(self, stub: SessionStubModel) -> None:
        self.stub = stub
        self.scenario: SessionScenario | None = None
        self.cluster = Cluster()
        self.exports: list[dict[str, Any]] = []
        self.marks: list[tuple[int, int, int]] = []  # per turn marker: exports, model requests, tool calls so far
        self.lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def reset(self, scenario: SessionScenario, cluster: Cluster) -> None:
        with self.lock:
            self.scenario, self.cluster, self.exports, self.marks = scenario, cluster, [], []

    def mark(self, turn: int) -> None:
        with self.lock:
            self.marks.append((len(self.exports), len(self.stub.requests), len(self.cluster.calls)))
            if self.scenario is not None and turn < len(self.scenario.user_turns):
                self.scenario.before_turn(turn, self.cluster)

    def __enter__(self) -> Sidecar:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _handler(sidecar: Sidecar) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            """The request body, sent with a length or in chunks (Node's OTLP exporter may stream it)."""
            if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)

        def do_POST(self) -> None:
            body = json.loads(self._body() or b"{}")
            if self.path.startswith("/v1/traces"):
                with sidecar.lock:
                    sidecar.exports.append(body)
                self._send(200, {})
            elif self.path.startswith("/turn/"):
                sidecar.mark(int(self.path.removeprefix("/turn/")))
                self._send(200, {})
            else:
                name = self.path.removeprefix("/tools/")
                with sidecar.lock:
                    tools = {m.__name__: m for m in sidecar.cluster.tools()}
                    if name not in tools:
                        self._send(404, {"error": f"no tool {name}"})
                        return
                    self._send(200, {"result": tools[name](**body)})

    return Handler


def tool_spec(method) -> dict[str, Any]:
    """A cluster tool as name, description and JSON schema, from its signature and docstring."""
    params = list(inspect.signature(method).parameters)
    hints = inspect.get_annotations(method, eval_str=True)
    return {"name": method.__name__, "description": inspect.getdoc(method),
            "parameters": {"type": "object", "additionalProperties": False, "required": params,
                           "properties": {n: {"type": _JSON_TYPES[hints[n]]} for n in params}}}


def _spans(exports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for doc in exports for rs in doc.get("resourceSpans", []) for ss in rs.get("scopeSpans", [])
            for s in ss.get("spans", [])]


def installed_version(package: str) -> str | None:
    path = NODE_APP / "node_modules" / package / "package.json"
    return json.loads(path.read_text())["version"] if path.is_file() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-content", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    variant = "no-content" if args.no_content else "content"
    runs = {}
    with SessionStubModel() as stub, Sidecar(stub) as sidecar:
        for scenario in SCENARIOS:
            session_id = f"ai-sdk/{scenario.name}/{variant}"
            cluster = scenario.new_cluster()
            stub.requests.clear()
            stub.model = scenario.model
            sidecar.reset(scenario, cluster)
            spec = {"turns": list(scenario.user_turns), "history": scenario.history, "sessionId": session_id,
                    "instructions": INSTRUCTIONS, "model": "gpt-4o-mini", "modelUrl": stub.base_url,
                    "sidecarUrl": sidecar.url, "otlpUrl": f"{sidecar.url}/v1/traces", "content": not args.no_content,
                    "tools": [tool_spec(cluster.get_pods)]}
            done = subprocess.run(["node", "session.mjs"], cwd=NODE_APP, capture_output=True, text=True, timeout=300,
                                  env={**os.environ, "SESSION_SPEC": json.dumps(spec)})
            lines = done.stdout.strip().splitlines()
            outcome = json.loads(lines[-1]) if lines else {"raised": done.stderr.strip()[-300:]}
            with sidecar.lock:
                exports, marks = list(sidecar.exports), list(sidecar.marks)
            turns = []
            for index in range(len(marks) - 1):
                (e0, r0, c0), (e1, r1, c1) = marks[index], marks[index + 1]
                spans, asked = _spans(exports[e0:e1]), stub.requests[r0:r1]
                answers = outcome.get("answers") or []
                turns.append({"trace_ids": sorted({s["traceId"] for s in spans}), "spans": len(spans),
                              "model_calls": len(asked), "tool_calls": cluster.calls[c0:c1],
                              "messages_sent": [len(b.get("messages") or []) for b in asked],
                              "prompt_tokens": [stub.usage(b)["prompt_tokens"] for b in asked],
                              "answer": answers[index] if index < len(answers) else None,
                              "raised": None if index < len(answers) else outcome.get("raised")})
            late = _spans(exports[marks[-1][0]:]) if marks else _spans(exports)
            if late or len(turns) != len(scenario.user_turns):
                raise RuntimeError(f"{scenario.name}: {len(turns)} turns marked, {len(late)} spans after the last; "
                                   f"node said {outcome}, stderr {done.stderr[-500:]}")
            (args.out / f"{scenario.name}.json").write_text(json.dumps(
                {"resourceSpans": [rs for doc in exports for rs in doc.get("resourceSpans", [])]}, sort_keys=True) + "\n")
            runs[scenario.name] = {"session_id": session_id, "setup_trace_ids": [], "turns": turns}
            print(f"ai-sdk: {scenario.name}: " + "; ".join(
                f"turn {i + 1}: {len(t['trace_ids'])} trace(s), messages {t['messages_sent']}, tools {t['tool_calls']}, "
                f"answer {t['answer']!r}" for i, t in enumerate(turns)), file=sys.stderr)
    manifest = {
        "framework": "ai-sdk",
        "instrumentation": "@ai-sdk/otel OpenTelemetry (the default integration: GenAI spans), enrichSpan writing "
                           "gen_ai.conversation.id from the call's runtime context",
        "content_capture": not args.no_content,
        "session_attribute": "gen_ai.conversation.id",
        "node": subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip(),
        "versions": {p: installed_version(p) for p in PACKAGES},
        "runs": runs,
        "cannot_express": {},
        "notes": ("Conversation: the app's own message list, generateText({ messages: [...history, new message], "
                  "runtimeContext: { conversationId } }) per turn, then history.push(...responseMessages); "
                  "history dropped: messages: [new message] only. The integration writes no conversation id: "
                  "new OpenTelemetry({ enrichSpan }) adds gen_ai.conversation.id from the runtime context. Tool: "
                  "get_pods only. stopWhen: stepCountIs(5). No content: telemetry { recordInputs: false, "
                  "recordOutputs: false }."),
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
