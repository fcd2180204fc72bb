"""Records the TypeScript corpus: every scenario through each JS setup, under Node.

    python -m tests.typescript.recorder --out tests/typescript/corpus [--setup ai-sdk-7 ...]

One process serves what the JS agents talk to: the stub model (``tests/frameworks/harness``),
the scenario's simulated cluster as HTTP tools (``POST /tools/<name>``), and an OTLP/HTTP
capture endpoint (``POST /v1/traces``, OTLP/JSON) standing in for mast-otel. Each run is one
``node agents/agents.mjs`` process, so each framework sets up its telemetry as a user's program
would, and exits only once its exporter has flushed. What was captured is written as one
``ExportTraceServiceRequest`` per file, ``<out>/<setup>/<scenario>.json`` (content recorded) and
``<out>/<setup>/no-content/<scenario>.json``, beside a ``manifest.json`` like the Python corpus's;
``<out>/labels.json`` has each scenario's expected modes, for ``mast-otel eval``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.frameworks.corpus_files import scenario_labels
from tests.frameworks.harness.cluster import Cluster, ToolFailure
from tests.frameworks.harness.scenarios import HISTORY_KEEP, HISTORY_TRIGGER, INSTRUCTIONS, LIMIT, SCENARIOS, TASK
from tests.frameworks.harness.stub_model import StubModel

HERE = Path(__file__).parent
AGENTS = HERE / "agents"
CORPUS = HERE / "corpus"
MODEL = "gpt-4o-mini"
_JSON_TYPES = {int: "integer", str: "string", bool: "boolean", float: "number"}


@dataclass(frozen=True)
class Setup:
    """One framework with one of its telemetry integrations, as ``agents.mjs`` knows it."""

    name: str
    framework: str
    instrumentation: str
    packages: tuple[str, ...]
    stream: bool = False
    cannot: tuple[tuple[str, str], ...] = ()  # scenario -> why this setup cannot express it
    notes: str = ""


SETUPS: tuple[Setup, ...] = (
    Setup("ai-sdk-7", "Vercel AI SDK 7 (generateText)", "@ai-sdk/otel OpenTelemetry (the default integration: GenAI spans)",
          ("ai", "@ai-sdk/otel", "@ai-sdk/openai")),
    Setup("ai-sdk-7-stream", "Vercel AI SDK 7 (streamText)", "@ai-sdk/otel OpenTelemetry (the default integration: GenAI spans)",
          ("ai", "@ai-sdk/otel", "@ai-sdk/openai"), stream=True),
    Setup("ai-sdk-7-legacy", "Vercel AI SDK 7 (streamText)", "@ai-sdk/otel LegacyOpenTelemetry (ai.* spans)",
          ("ai", "@ai-sdk/otel", "@ai-sdk/openai"), stream=True),
    Setup("ai-sdk-6", "Vercel AI SDK 6 (generateText)", "experimental_telemetry (ai.* spans)", ("ai-v6", "@ai-sdk/openai-v3")),
    Setup("openai-agents", "OpenAI Agents SDK for JavaScript", "OpenInference (@arizeai/openinference-instrumentation-openai-agents)",
          ("@openai/agents", "@arizeai/openinference-instrumentation-openai-agents"),
          notes="Model: the SDK's chat completions transport over an OpenAI client at the stub. Limit: run(..., "
                "{ maxTurns }), which raises MaxTurnsExceededError. History: callModelInputFilter keeping the last "
                "few input items. No content: OpenInference's traceConfig { hideInputs, hideOutputs }."),
    Setup("mastra", "Mastra", "@mastra/otel-exporter through @mastra/observability",
          ("@mastra/core", "@mastra/observability", "@mastra/otel-exporter"),
          cannot=(("history", "its chat spans carry no input messages, so a shrinking context cannot show; and its "
                              "prepareStep works on Mastra's stored messages (a tool call and its result are one "
                              "message), on which the window the other setups use never triggers"),),
          notes="No content: a span output processor that drops every span's input and output "
                "(Mastra's exporter has no content switch)."),
)
BY_NAME = {s.name: s for s in SETUPS}
COMMON_NOTES = (f"Every run: stopWhen stepCountIs({LIMIT}) (AI SDK) / maxSteps {LIMIT} (Mastra), which stops the "
                f"loop without an error; maxTurns {LIMIT} (OpenAI Agents SDK), which raises. History: prepareStep keeps only the last {HISTORY_KEEP} messages once more "
                f"than {HISTORY_TRIGGER} would be sent. Tools are HTTP calls to the recorder's simulated cluster; a "
                "raising tool is one whose call fails (HTTP 500), so execute throws.")


def tool_specs(cluster: Cluster) -> list[dict[str, Any]]:
    """Each cluster tool as name, description and JSON schema, from its signature and docstring."""
    specs = []
    for method in cluster.tools():
        params = {name: p for name, p in inspect.signature(method).parameters.items()}
        hints = inspect.get_annotations(method, eval_str=True)
        specs.append({"name": method.__name__, "description": inspect.getdoc(method),
                      "parameters": {"type": "object", "additionalProperties": False, "required": list(params),
                                     "properties": {n: {"type": _JSON_TYPES[hints[n]]} for n in params}}})
    return specs


class Sidecar:
    """The scenario's cluster as HTTP tools, and an OTLP/JSON capture endpoint."""

    def __init__(self) -> None:
        self.cluster = Cluster()
        self.exports: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def reset(self, cluster: Cluster) -> None:
        with self._lock:
            self.cluster, self.exports = cluster, []

    def captured(self) -> dict[str, Any]:
        """Everything exported since the last reset, as one request."""
        with self._lock:
            return {"resourceSpans": [rs for doc in self.exports for rs in doc.get("resourceSpans", [])]}

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
            """The request body, sent with a length or in chunks (Node's OTLP exporter streams it)."""
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
                with sidecar._lock:
                    sidecar.exports.append(body)
                self._send(200, {})
                return
            name = self.path.removeprefix("/tools/")
            with sidecar._lock:
                method = getattr(sidecar.cluster, name, None) if name in {m.__name__ for m in sidecar.cluster.tools()} else None
                if method is None:
                    self._send(404, {"error": f"no tool {name}"})
                    return
                try:
                    self._send(200, {"result": method(**body)})
                except ToolFailure as exc:
                    self._send(500, {"error": str(exc)})

    return Handler


def record(setup: Setup, out: Path, content: bool, node: str = "node") -> None:
    folder = out / setup.name / ("" if content else "no-content")
    if content:
        shutil.rmtree(folder, ignore_errors=True)  # no stale scenario left from an earlier recording
    folder.mkdir(parents=True, exist_ok=True)
    cannot = dict(setup.cannot)
    runs = {}
    with StubModel() as stub, Sidecar() as sidecar:
        for scenario in SCENARIOS:
            if scenario.name in cannot:
                continue
            cluster = scenario.new_cluster()
            stub.load(scenario.script())
            sidecar.reset(cluster)
            spec = {"setup": setup.name.removesuffix("-stream"),
                    "stream": setup.stream, "task": TASK, "instructions": INSTRUCTIONS, "limit": LIMIT, "model": MODEL,
                    "tools": tool_specs(cluster), "toolsUrl": f"{sidecar.url}/tools", "otlpUrl": f"{sidecar.url}/v1/traces",
                    "modelUrl": stub.base_url, "content": content,
                    "history": {"trigger": HISTORY_TRIGGER, "keep": HISTORY_KEEP} if "history" in scenario.needs else None}
            done = subprocess.run([node, str(AGENTS / "agents.mjs")], cwd=AGENTS, capture_output=True, text=True,
                                  env={**os.environ, "CORPUS_SPEC": json.dumps(spec)}, timeout=120)
            captured = sidecar.captured()
            spans = sum(len(ss.get("spans", [])) for rs in captured["resourceSpans"] for ss in rs.get("scopeSpans", []))
            raised = _outcome(done).get("raised")
            (folder / f"{scenario.name}.json").write_text(json.dumps(captured, sort_keys=True) + "\n")
            runs[scenario.name] = {"model_calls": len(stub.requests), "tool_calls": list(cluster.calls),
                                   "raised": raised, "spans": spans}
            print(f"{setup.name}{'' if content else ' (no content)'}: {scenario.name}: {spans} spans, "
                  f"{len(stub.requests)} model calls, tools {cluster.calls}" + (f", raised {raised}" if raised else ""),
                  file=sys.stderr)
    manifest = {"framework": setup.framework, "instrumentation": setup.instrumentation, "content_capture": content,
                "node": subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip(),
                "versions": {p: installed_version(p) for p in setup.packages}, "runs": runs,
                "cannot_express": cannot, "notes": " ".join(filter(None, (COMMON_NOTES, setup.notes)))}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def _outcome(done: subprocess.CompletedProcess) -> dict[str, Any]:
    """What the agent printed last (``{"answer"}`` or ``{"raised"}``), or the crash it did not catch."""
    lines = done.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else {"raised": done.stderr.strip()[-300:] or None}
    except ValueError:
        return {"raised": lines[-1][:300]}


def installed_version(package: str) -> str | None:
    path = AGENTS / "node_modules" / package / "package.json"
    return json.loads(path.read_text())["version"] if path.is_file() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CORPUS)
    parser.add_argument("--setup", nargs="*", choices=list(BY_NAME), help="only these setups")
    args = parser.parse_args()
    for setup in (BY_NAME[n] for n in args.setup) if args.setup else SETUPS:
        for content in (True, False):
            record(setup, args.out, content)
    (args.out / "labels.json").write_text(json.dumps(scenario_labels(), indent=2) + "\n")  # what `mast-otel eval` reads


if __name__ == "__main__":
    main()
