"""A scripted OpenAI-compatible chat-completions server (real HTTP, stdlib only).

Each request answers with the next action of the loaded script: a tool call or a final
text answer. The script does not depend on which framework calls it, so the same scenario
plays out the same way in every framework. Streaming (SSE) and non-streaming answers are
both served, since frameworks differ in which they use. A request for a model the script
does not expect still gets the next action: frameworks that make extra calls see the final
answer repeated once the script is used up.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "gpt-4o-mini-2024-07-18"


@dataclass(frozen=True)
class Call:
    """The model asks for one tool call."""

    tool: str
    arguments: dict[str, Any]
    say: str | None = None  # text the model writes beside the call (a report handed back with a transfer)


@dataclass(frozen=True)
class Answer:
    """The model gives its final answer as text."""

    text: str


Action = Call | Answer


@dataclass
class Script:
    actions: list[Action]
    position: int = 0

    def next(self) -> Action:
        if self.position < len(self.actions):
            action = self.actions[self.position]
            self.position += 1
            return action
        last = self.actions[-1]
        return last if isinstance(last, Answer) else Answer("Done.")


@dataclass
class StubModel:
    """``with StubModel() as stub: stub.load(script); ... base_url=stub.base_url``."""

    dialect: str = "tools"  # "tools": OpenAI tool calls; "react": Thought/Action text; "code": a code agent's code
    requests: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._script = Script([Answer("Done.")])
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def load(self, script: Script) -> None:
        with self._lock:
            self._script = Script(list(script.actions))
            self.requests.clear()

    def next_action(self, body: dict[str, Any]) -> Action:
        """The scripted action for this request (called under the lock)."""
        return self._script.next()

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message for one request."""
        with self._lock:
            self.requests.append(body)
            action = self.next_action(body)
            n = next(self._ids)
        tools = {t.get("function", {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        if isinstance(action, Answer) and "final_answer" in tools:
            action = Call("final_answer", {"answer": action.text})  # frameworks that end through a tool
        if isinstance(action, Call) and self.dialect == "tools" and (not tools or body.get("tool_choice") == "none"):
            # A request that offers no tools or forbids them (e.g. a framework forcing a final answer once
            # its step limit is hit) cannot be answered with a tool call: answer in text, claiming nothing.
            action = Answer(f"Unfinished: the next step would have been {action.tool}.")
        if self.dialect == "code":  # a code agent (smolagents CodeAgent): the action is code calling the tool
            if isinstance(action, Call):
                call = ", ".join(f"{k}={v!r}" for k, v in action.arguments.items())
                return {"role": "assistant", "content": f"Thought: I should use {action.tool}.\n<code>\n"
                                                        f"result = {action.tool}({call})\nprint(result)\n</code>"}
            return {"role": "assistant", "content": f"Thought: I can answer now.\n<code>\nfinal_answer({action.text!r})\n</code>"}
        if self.dialect == "react":
            if isinstance(action, Call):
                text = f"Thought: I should use {action.tool}.\nAction: {action.tool}\nAction Input: {json.dumps(action.arguments)}"
            else:
                text = f"Thought: I now know the final answer\nFinal Answer: {action.text}"
            return {"role": "assistant", "content": text}
        if isinstance(action, Call):
            return {"role": "assistant", "content": action.say, "tool_calls": [{
                "id": f"call_{n:04d}_{action.tool}", "type": "function",
                "function": {"name": action.tool, "arguments": json.dumps(action.arguments)}}]}
        return {"role": "assistant", "content": action.text}

    def usage(self, body: dict[str, Any]) -> dict[str, int]:
        """The token usage reported for one request (the same for every request unless a subclass counts)."""
        return USAGE

    def __enter__(self) -> StubModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


USAGE = {"prompt_tokens": 120, "completion_tokens": 18, "total_tokens": 138}


def _handler(stub: StubModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode())
            else:
                self._send(404, b"{}")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, json.dumps({"error": {"message": f"stub serves chat completions only, not {self.path}"}}).encode())
                return
            message = stub.answer(body)
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            created = 1700000000 + len(stub.requests)
            if body.get("stream"):
                self._stream(message, finish, created, body)
                return
            self._send(200, json.dumps({
                "id": f"chatcmpl-{len(stub.requests)}", "object": "chat.completion", "created": created,
                "model": MODEL, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": stub.usage(body)}).encode())

        def _stream(self, message: dict[str, Any], finish: str, created: int, body: dict[str, Any]) -> None:
            base = {"id": f"chatcmpl-{len(stub.requests)}", "object": "chat.completion.chunk", "created": created, "model": MODEL}
            deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
            if message.get("content"):
                deltas.append({"content": message["content"]})
            for i, call in enumerate(message.get("tool_calls") or []):
                deltas.append({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                               "function": {"name": call["function"]["name"], "arguments": ""}}]})
                deltas.append({"tool_calls": [{"index": i, "function": {"arguments": call["function"]["arguments"]}}]})
            chunks = [dict(base, choices=[{"index": 0, "delta": d, "finish_reason": None}]) for d in deltas]
            chunks.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
            if (body.get("stream_options") or {}).get("include_usage"):
                chunks.append(dict(base, choices=[], usage=stub.usage(body)))
            payload = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
            self._send(200, payload, "text/event-stream")

    return Handler
