"""The cost of one pass of the OTLP/gRPC connection sweeper (per-address caps, idle near the cap).

    .venv/bin/python benchmarks/bench_grpc_sweep.py [--connections N]

A grpcio server in this process takes ``--connections`` (default 1,000) idle HTTP/2
connections from 250 loopback addresses, opened from this process too, so a pass looks at
twice as many sockets as the server holds (its own side and the clients'). Prints the best of
five passes; the sweeper runs one every half second.
"""

from __future__ import annotations

import argparse
import resource
import socket
import time
from concurrent import futures

import grpc

from mast_otel.processors.service.receivers.grpc_connections import ConnectionSweeper

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=1000)
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_NOFILE, (4 * args.connections + 100,) * 2)
    server = grpc.server(futures.ThreadPoolExecutor(2), options=[("grpc.max_allowed_incoming_connections", 2 * args.connections)])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    sweeper = ConnectionSweeper(args.connections, 100 * args.connections, 3600, lambda reason: None)
    sweeper.port = port
    opened = []
    for i in range(args.connections):
        sock = socket.socket()
        sock.bind((f"127.0.3.{i % 250 + 1}", 0))
        sock.connect(("127.0.0.1", port))
        sock.sendall(PREFACE)
        opened.append(sock)
    time.sleep(1)
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        sweeper.sweep()
        best = min(best, time.perf_counter() - started)
    print(f"{len(sweeper._open())} connections seen, one pass: {best * 1000:.1f} ms (best of 5)")
    for sock in opened:
        sock.close()
    server.stop(0)


if __name__ == "__main__":
    main()
