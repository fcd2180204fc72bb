"""Hostile and broken peers for the soak's hostile profiles and ``tests/reliability``: spans
with long identifiers, a re-export backend that accepts connections and never answers, and an
OTLP/gRPC sender that stalls mid-message (HTTP/2 spoken by hand on a raw socket, so it can stop
where no gRPC client would)."""

from __future__ import annotations

import os
import socket
import struct
import threading

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

NOW = 1_760_000_000_000_000_000


def _attrs(span, **values: str) -> None:
    for key, value in values.items():
        span.attributes.append(KeyValue(key=key, value=AnyValue(string_value=value)))


def tool_spans(trace_id: bytes, count: int, id_chars: int, *, parent: bytes | None = None) -> ExportTraceServiceRequest:
    """``count`` tool calls of one trace, each carrying a conversation id and a call id of
    ``id_chars`` characters (neither is content: both are kept whatever the capture setting)."""
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for i in range(count):
        span = spans.add(trace_id=trace_id, span_id=os.urandom(8), parent_span_id=parent or os.urandom(8),
                         name="execute_tool lookup", start_time_unix_nano=NOW + i, end_time_unix_nano=NOW + i + 1)
        _attrs(span, **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                        "gen_ai.conversation.id": os.urandom(id_chars // 2).hex(),
                        "gen_ai.tool.call.id": os.urandom(id_chars // 2).hex()})
    return request


def long_key_run(id_chars: int, steps: int = 5) -> bytes:
    """Part of a run that never ends (its agent span is never sent): a model call and ``steps``
    tool calls where every value that becomes a key carries ``id_chars`` characters of its own,
    the service name, the agent name, the session and conversation ids and each tool call id
    (with the default ``steps``, 24 ids: 4.8 MB of them at 200,000 characters)."""
    def long() -> str:
        return os.urandom(id_chars // 2).hex()

    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(KeyValue(key="service.name", value=AnyValue(string_value=long())))
    spans = resource_spans.scope_spans.add().spans
    trace_id, root = os.urandom(16), os.urandom(8)
    session = {"gen_ai.conversation.id": long(), "session.id": long(), "gen_ai.agent.name": long()}
    chat = spans.add(trace_id=trace_id, span_id=os.urandom(8), parent_span_id=root, name="chat m",
                     start_time_unix_nano=NOW, end_time_unix_nano=NOW + 1)
    _attrs(chat, **{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", **session})
    for i in range(steps):
        span = spans.add(trace_id=trace_id, span_id=os.urandom(8), parent_span_id=root, name="execute_tool lookup",
                         start_time_unix_nano=NOW + i + 2, end_time_unix_nano=NOW + i + 3)
        _attrs(span, **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                        "gen_ai.tool.call.id": long(), **session})
    return request.SerializeToString()


def whole_run(id_chars: int, steps: int = 11) -> bytes:
    """An agent run that ends (root agent span plus ``steps`` tool calls), long ids on every step."""
    trace_id, root = os.urandom(16), os.urandom(8)
    request = tool_spans(trace_id, steps, id_chars, parent=root)
    span = request.resource_spans[0].scope_spans[0].spans.add(
        trace_id=trace_id, span_id=root, name="invoke_agent a", start_time_unix_nano=NOW, end_time_unix_nano=NOW + 10**9)
    _attrs(span, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
    return request.SerializeToString()


class SilentBackend:
    """A port that accepts connections (the kernel's backlog) and never answers."""

    def __enter__(self) -> SilentBackend:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/traces"
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


EXPORT_PATH = b"/opentelemetry.proto.collector.trace.v1.TraceService/Export"
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING = 0, 1, 3, 4, 6
ACK, END_STREAM, END_HEADERS = 0x1, 0x1, 0x4


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(name: bytes, value: bytes) -> bytes:
    """An HPACK header field, literal without indexing, new name (both shorter than 127 bytes)."""
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


class StalledSender:
    """One HTTP/2 connection from ``source`` with ``streams`` Export calls that each declare a
    1 MB message, send 10 bytes of it and stop; it answers the server's SETTINGS and PINGs so
    the connection itself stays healthy. With ``restall`` each stream the server ends is
    replaced by a new stalled one on the same connection, as a persistent attacker would."""

    def __init__(self, port: int, streams: int, source: str = "127.0.0.2", restall: bool = False) -> None:
        self.sock = socket.socket()
        self.sock.bind((source, 0))
        self.sock.connect(("127.0.0.1", port))
        self.restall = restall
        self.opened = 0
        self._ended: set[int] = set()
        self._block = b"".join(literal(n, v) for n, v in (
            (b":method", b"POST"), (b":scheme", b"http"), (b":path", EXPORT_PATH), (b":authority", b"127.0.0.1"),
            (b"content-type", b"application/grpc"), (b"te", b"trailers")))
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0) + b"".join(self._stream() for _ in range(streams)))
        self.closed = threading.Event()
        threading.Thread(target=self._answer, daemon=True).start()

    def _stream(self) -> bytes:
        stream = 2 * self.opened + 1
        self.opened += 1
        return (frame(HEADERS, END_HEADERS, stream, self._block)
                + frame(DATA, 0, stream, b"\x00" + struct.pack(">I", 1_000_000) + b"x" * 10))

    def _answer(self) -> None:
        buffer = b""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                buffer += chunk
                while len(buffer) >= 9:
                    length = int.from_bytes(buffer[:3], "big")
                    if len(buffer) < 9 + length:
                        break
                    kind, flags, payload = buffer[3], buffer[4], buffer[9:9 + length]
                    stream = int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
                    buffer = buffer[9 + length:]
                    if kind == SETTINGS and not flags & ACK:
                        self.sock.sendall(frame(SETTINGS, ACK, 0))
                    elif kind == PING and not flags & ACK:
                        self.sock.sendall(frame(PING, ACK, 0, payload))
                    elif (kind == RST_STREAM or (kind == HEADERS and flags & END_STREAM)) and stream not in self._ended:
                        self._ended.add(stream)
                        if self.restall:
                            self.sock.sendall(self._stream())
        except OSError:
            pass
        self.closed.set()

    def close(self) -> None:
        try:  # a close alone leaves the connection open while the answering thread waits in recv
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
