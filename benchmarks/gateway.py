"""A Collector gateway and a hostile crowd against a real ``mast-otel serve`` over OTLP/gRPC.

    .venv/bin/python benchmarks/gateway.py [--rounds 5] [--concurrency 10] [--body-mb 1]
        [--stalling-addresses 19] [--exporter-calls 6]

A gateway is one client address with many concurrent exports: the Collector's default
``sending_queue`` runs 10 consumers over one connection. Three phases, each on the same server
(default configuration, so the memory budget is 512 MiB):

- ``gateway``: ``--rounds`` rounds of ``--concurrency`` concurrent exports of about
  ``--body-mb`` each, over one channel from 127.0.0.1; every answer's status and latency.
- ``crowd``: ``--stalling-addresses`` addresses (127.0.1.x), each holding one Export stream that
  sends 10 bytes of a declared 1 MB message and stops, and opens a new one whenever the server
  ends it; meanwhile a normal exporter (127.0.0.1) makes ``--exporter-calls`` small calls, one
  after the other, each with a 10 s deadline (the OTLP exporter's default), then the gateway
  makes two more rounds.
- the server's counts: calls cancelled as stalled, refused per address share, bytes in flight at
  the end; its RSS at the start and at its peak (``/proc``, every 50 ms).

Prints one JSON report; ``tests/reliability/test_stalled_grpc.py`` runs the same functions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from hostile_clients import StalledSender
from large_bodies import EXPORT, MB, large_bodies
from soak import RSSSampler, ServeProcess, scrape, total


def small_request() -> bytes:
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.add(
        trace_id=os.urandom(16), span_id=os.urandom(8), name="GET /", start_time_unix_nano=1, end_time_unix_nano=2)
    return request.SerializeToString()


def _call(export: grpc.UnaryUnaryMultiCallable, body: bytes, timeout: float) -> tuple[str, float]:
    started = time.monotonic()
    try:
        export(body, timeout=timeout)
        status = "OK"
    except grpc.RpcError as exc:
        status = exc.code().name
    return status, time.monotonic() - started


def _summary(results: list[tuple[str, float]]) -> dict[str, Any]:
    seconds = sorted(s for _, s in results)
    return {"calls": len(results), "statuses": dict(Counter(status for status, _ in results)),
            "median_s": round(seconds[len(seconds) // 2], 3) if seconds else None,
            "max_s": round(seconds[-1], 3) if seconds else None}


def gateway_rounds(port: int, bodies: list[bytes], concurrency: int, timeout: float = 30.0) -> dict[str, Any]:
    """``bodies`` exported ``concurrency`` at a time over one channel (one connection, one address)."""
    results: list[tuple[str, float]] = []
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", -1)]) as channel:
        export = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        for start in range(0, len(bodies), concurrency):
            batch: list[tuple[str, float]] = []
            threads = [threading.Thread(target=lambda b=b: batch.append(_call(export, b, timeout)))
                       for b in bodies[start:start + concurrency]]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            results += batch
    return _summary(results)


def exporter_calls(port: int, calls: int, timeout: float = 10.0) -> dict[str, Any]:
    """A normal exporter: ``calls`` small exports one after the other, from 127.0.0.1 (a gRPC
    channel cannot choose its source address; the hostile crowd's raw sockets can)."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        export = channel.unary_unary(EXPORT, request_serializer=None, response_deserializer=None)
        return _summary([_call(export, small_request(), timeout) for _ in range(calls)])


class StallingCrowd:
    """One persistent stalled stream from each of ``addresses`` distinct loopback addresses."""

    def __init__(self, port: int, addresses: int) -> None:
        self.senders = [StalledSender(port, 1, source=f"127.0.1.{i + 1}", restall=True) for i in range(addresses)]

    def streams_opened(self) -> int:
        return sum(s.opened for s in self.senders)

    def close(self) -> None:
        for sender in self.senders:
            sender.close()


def server_counts(url: str) -> dict[str, float]:
    metrics = scrape(url)
    return {reason: total(metrics, "mast_ingest_refused_requests_total", protocol="grpc", reason=reason)
            for reason in ("stalled", "peer_limit", "bytes_in_flight", "over_budget", "body_timeout")} | {
        "bytes_in_flight": total(metrics, "mast_request_bytes_in_flight")}


def run(workdir: Path, *, rounds: int = 5, concurrency: int = 10, body_mb: float = 1.0, stalling_addresses: int = 19,
        exporter: int = 6, overrides: dict[str, dict] | None = None) -> dict[str, Any]:
    bodies = large_bodies((rounds + 2) * concurrency, int(body_mb * MB))
    with ServeProcess(workdir, overrides) as serve:
        report: dict[str, Any] = {"body_mb": round(len(bodies[0]) / MB, 2), "concurrency": concurrency,
                                  "idle_rss_mb": round(serve.rss() / MB, 1)}
        sampler = RSSSampler(serve.pid, interval=0.05)
        sampler.start()
        report["gateway"] = gateway_rounds(serve.grpc_port, bodies[:rounds * concurrency], concurrency)
        crowd = StallingCrowd(serve.grpc_port, stalling_addresses)
        try:
            time.sleep(0.5)  # the crowd's streams hold their threads
            report["crowd"] = {"addresses": stalling_addresses,
                               "exporter": exporter_calls(serve.grpc_port, exporter),
                               "gateway": gateway_rounds(serve.grpc_port, bodies[rounds * concurrency:], concurrency),
                               "stalled_streams_opened": crowd.streams_opened()}
        finally:
            crowd.close()
        deadline = time.monotonic() + 10  # the crowd's connections closed: their calls end, their bytes are freed
        while server_counts(serve.url)["bytes_in_flight"] and time.monotonic() < deadline:
            time.sleep(0.1)
        report["server"] = server_counts(serve.url)
        sampler.halt.set()
        sampler.join()
        report["peak_rss_mb"] = round(sampler.peak / MB, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--body-mb", type=float, default=1.0)
    parser.add_argument("--stalling-addresses", type=int, default=19)
    parser.add_argument("--exporter-calls", type=int, default=6)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        report = run(Path(tmp), rounds=args.rounds, concurrency=args.concurrency, body_mb=args.body_mb,
                     stalling_addresses=args.stalling_addresses, exporter=args.exporter_calls)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
