"""Concurrent large request bodies against a real ``mast-otel serve``: does RSS stay in budget?

    .venv/bin/python benchmarks/large_bodies.py [--protocol http|grpc] [--clients 24] [--body-mb 12]
        [--budget-mb 16] [--seconds-per-body 3] [--waves 1] [--addresses 1] [--open-runs 0]
        [--max-bytes-in-flight BYTES] [--sample-seconds 0.05]

Each client sends one body of ``--body-mb`` of agent runs (OTLP protobuf), all at once: over
HTTP slowly (``--seconds-per-body`` to write it, so every body is in flight together), over
gRPC as fast as gRPC goes. The server's RSS is sampled from ``/proc`` throughout and compared
with the envelope ``idle + 2 x assembly.max_buffered_bytes + 64 MB``. ``--waves`` sends the
clients again, one wave after the other, to the same process: what a wave leaves behind shows
in the next one's peak. ``--open-runs N`` first sends N runs that never end (4.8 MB each, see
``hostile_clients.long_key_run``), so the bodies arrive while part of the budget is held. ``--addresses N`` spreads the HTTP clients over N loopback addresses
(127.0.0.1 ... 127.0.0.N), so the per-address share of the bytes in flight does not hold them back. ``--max-bytes-in-flight``
set very high switches the bytes-in-flight admission off in effect, to see what it prevents.
Prints one JSON report; ``tests/reliability/test_backpressure.py`` runs the same function.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

from hostile_clients import long_key_run
from soak import RSSSampler, RunFactory, ServeProcess

MB = 1024 * 1024
OVERHEAD_MB = 64
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def large_bodies(count: int, body_bytes: int, seed: int = 11) -> list[bytes]:
    """``count`` distinct request bodies of about ``body_bytes`` each (fresh trace ids)."""
    return next(waves_of_large_bodies(count, body_bytes, seed))


def waves_of_large_bodies(count: int, body_bytes: int, seed: int = 11, waves: int = 1) -> Iterator[list[bytes]]:
    """``waves`` lists of ``count`` distinct request bodies of about ``body_bytes`` each (fresh
    trace ids in each), made one list at a time."""
    factory = RunFactory(templates=8, capture_content=True, seed=seed)
    sample, _, _ = factory.batch(50)
    runs = max(1, body_bytes * 50 // len(sample))
    for _ in range(waves):
        yield [factory.batch(runs)[0] for _ in range(count)]


def send_slowly(port: int, body: bytes, seconds: float, source: str = "127.0.0.1") -> str:
    """POST ``body`` over a raw socket from ``source``, spread over ``seconds``; the answer's
    status, or how it ended."""
    chunks = 64
    step = -(-len(body) // chunks)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60, source_address=(source, 0)) as sock:
            sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-protobuf\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body))
            for i in range(chunks):
                sock.sendall(body[i * step:(i + 1) * step])
                time.sleep(seconds / chunks)
            head = sock.recv(64)
    except OSError as exc:  # refused early: the server closed the connection while we were still writing
        return type(exc).__name__
    return head.split(b" ", 2)[1].decode() if head.startswith(b"HTTP/1.1 ") else "closed"


def send_grpc(port: int, body: bytes) -> str:
    import grpc

    with grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", -1)]) as channel:
        call = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        try:
            call(body, timeout=120)
            return "OK"
        except grpc.RpcError as exc:
            return exc.code().name


def run(workdir: Path, *, protocol: str = "http", clients: int = 24, body_mb: float = 12, budget_mb: float = 16,
        seconds_per_body: float = 3.0, max_bytes_in_flight: int | None = None,
        assembly: dict[str, Any] | None = None, waves: int = 1, addresses: int = 1, open_runs: int = 0,
        sample_seconds: float = 0.05) -> dict[str, Any]:
    waves_of_bodies = waves_of_large_bodies(clients, int(body_mb * MB), waves=waves)
    bodies = next(waves_of_bodies)
    receiver: dict[str, Any] = {"retry_after_seconds": 1}
    if max_bytes_in_flight is not None:
        receiver["max_bytes_in_flight"] = max_bytes_in_flight
    overrides = {"receiver": receiver, "assembly": {"max_buffered_bytes": int(budget_mb * MB), **(assembly or {})}}
    with ServeProcess(workdir, overrides) as serve:
        time.sleep(1.0)
        idle = serve.rss()
        sampler = RSSSampler(serve.pid, interval=sample_seconds)
        sampler.start()
        for _ in range(open_runs):  # runs that never end take part of the budget first
            status = send_slowly(serve.http_port, long_key_run(200_000), 0.0)
            assert status == "200", f"an open run was refused ({status}) before the large bodies were sent"
        statuses: Counter = Counter()
        lock = threading.Lock()

        def client(body: bytes, source: str) -> None:
            status = (send_slowly(serve.http_port, body, seconds_per_body, source) if protocol == "http"
                      else send_grpc(serve.grpc_port, body))
            with lock:
                statuses[status] += 1

        started = time.monotonic()
        for wave in range(waves):
            if wave:
                bodies = next(waves_of_bodies)
            threads = [threading.Thread(target=client, args=(b, f"127.0.0.{1 + i % addresses}")) for i, b in enumerate(bodies)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
        seconds = time.monotonic() - started
        time.sleep(1.0)  # what the last accepted request left behind
        sampler.halt.set()
        sampler.join()
        alive = serve.proc.poll() is None
    limit = idle + 2 * int(budget_mb * MB) + OVERHEAD_MB * MB
    return {
        "protocol": protocol, "clients": clients, "body_mb": round(len(bodies[0]) / MB, 1), "budget_mb": budget_mb,
        "max_bytes_in_flight": max_bytes_in_flight, "waves": waves, "addresses": addresses, "open_runs": open_runs, "statuses": dict(statuses), "seconds": round(seconds, 1),
        "idle_rss_mb": round(idle / MB, 1), "peak_rss_mb": round(sampler.peak / MB, 1), "rss_limit_mb": round(limit / MB, 1),
        "alive": alive, "held": alive and sampler.peak <= limit,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", choices=("http", "grpc"), default="http")
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--body-mb", type=float, default=12)
    parser.add_argument("--budget-mb", type=float, default=16)
    parser.add_argument("--seconds-per-body", type=float, default=3.0)
    parser.add_argument("--waves", type=int, default=1)
    parser.add_argument("--addresses", type=int, default=1)
    parser.add_argument("--open-runs", type=int, default=0)
    parser.add_argument("--max-bytes-in-flight", type=int)
    parser.add_argument("--sample-seconds", type=float, default=0.05, help="how often RSS is read from /proc")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        report = run(Path(tmp), protocol=args.protocol, clients=args.clients, body_mb=args.body_mb, budget_mb=args.budget_mb,
                     seconds_per_body=args.seconds_per_body, max_bytes_in_flight=args.max_bytes_in_flight,
                     waves=args.waves, addresses=args.addresses, open_runs=args.open_runs,
                     sample_seconds=args.sample_seconds)
    print(json.dumps(report, indent=2))
    return 0 if report["held"] else 1


if __name__ == "__main__":
    sys.exit(main())
