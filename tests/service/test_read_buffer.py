"""The HTTP receiver reads sockets into one buffer per event-loop thread (``http_limits``): bodies
arriving over many reads, on two servers in one process at once, each arrive whole and as sent."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time

from tests.service.support import make_config, metric, running
from tests.service.test_receivers import proto_span, request_of

from mast_otel.processors.service.receivers.http_limits import READ_BUFFER_BYTES, _read_buffer, protocol_for


def test_reads_go_to_one_buffer_per_thread(tmp_path):
    assert issubclass(protocol_for(make_config(tmp_path).receiver), asyncio.BufferedProtocol)
    mine = _read_buffer()
    assert _read_buffer() is mine and len(mine) == READ_BUFFER_BYTES
    theirs: list[memoryview] = []
    thread = threading.Thread(target=lambda: theirs.append(_read_buffer()))
    thread.start()
    thread.join()
    assert theirs[0] is not mine and theirs[0].obj is not mine.obj


def _post_in_pieces(port: int, body: bytes, piece: int = 7_000) -> bytes:
    """POST ``body`` to /v1/traces in small writes with pauses, so the server reads it in many parts."""
    head = (f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        for start in range(0, len(body), piece):
            sock.sendall(body[start:start + piece])
            if start % (piece * 16) == 0:
                time.sleep(0.002)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_bodies_read_in_many_parts_on_two_servers_at_once_arrive_whole(tmp_path):
    with running(make_config(tmp_path / "a")) as first, running(make_config(tmp_path / "b")) as second:
        answers: dict[int, list[bytes]] = {first.http_port: [], second.http_port: []}
        sent: dict[int, int] = {first.http_port: 0, second.http_port: 0}

        def client(port: int) -> None:
            for _ in range(3):
                trace_id = os.urandom(16)
                # one large attribute makes the body span several 256 KiB reads
                spans = [proto_span(trace_id, os.urandom(8), **{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                                                               "note": os.urandom(200_000).hex()}) for _ in range(2)]
                sent[port] += len(spans)
                answers[port].append(_post_in_pieces(port, request_of(*spans).SerializeToString()))

        threads = [threading.Thread(target=client, args=(port,)) for port in answers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        for server in (first, second):
            assert all(a.startswith(b"HTTP/1.1 200") for a in answers[server.http_port]), answers[server.http_port]
            assert metric(server, "mast_spans_received_total", protocol="http") == sent[server.http_port] == 6
