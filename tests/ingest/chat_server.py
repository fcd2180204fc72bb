"""A tiny OpenAI-compatible chat-completions server for tests: real HTTP, canned replies.

Each request pops the next scripted reply (text, or tool calls); the instrumented ``openai``
client under test talks to it over a real socket, so the instrumentation libraries record
exactly what they would against the real API.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def text_reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def tool_reply(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)
        ],
    }


class ChatServer:
    """``with ChatServer([reply, ...]) as server: OpenAI(base_url=server.base_url, ...)``."""

    def __init__(self, replies: list[dict[str, Any]], model: str = "gpt-4o-mini-2024-07-18") -> None:
        self.replies = list(replies)
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                message = outer.replies.pop(0)
                payload = json.dumps(
                    {
                        "id": f"chatcmpl-{len(outer.requests)}",
                        "object": "chat.completion",
                        "created": 1700000000,
                        "model": outer.model,
                        "choices": [
                            {
                                "index": 0,
                                "message": message,
                                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
