"""What one OTLP/HTTP request costs a ``mast-otel serve`` process, apart from its spans.

    .venv/bin/python benchmarks/bench_request_size.py [--spans N] [--wal on|off]
        [--fsync always|interval|never] [--server-command "PATH/TO/mast-otel serve"]

An exporter batches up to 512 spans per request under load, but sends what it has every
few seconds when traffic is light, often a handful. Then the per-request work (HTTP parsing,
routing, admission, the write-ahead log's record and fsync) outweighs the spans. This sends
the same spans (bench_decode's agent runs, fresh trace ids per size) in requests of 1, 8, 64
and 512 spans, one at a time over one keep-alive connection, to a server whose runs do not
complete meanwhile (grace one hour: ingest only), and reads the server's CPU seconds (all
threads) from ``/proc/<pid>/stat``.

Reported per size: server CPU microseconds per request and per span, and the per-span cost
as a ratio to the 512-span requests of the same run. A least-squares line through the four
sizes splits the cost into microseconds per request (its intercept) and per span (its slope).
"""

from __future__ import annotations

import argparse
import http.client
import json
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import agent_traces  # noqa: E402  (the same workload)
from bench_end_to_end import Server  # noqa: E402  (the same server process)
from bench_ingest import bodies_with_fresh_ids  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402

SIZES = (1, 8, 64, 512)


def server_cpu_per_request(command: list[str], tmp: Path, bodies: list[bytes], wal: bool | None,
                           fsync: str | None) -> float:
    """Server CPU seconds per request, the first tenth of the requests left out (warm-up)."""
    server = Server(command, tmp, grace=3600, wal=wal, fsync=fsync)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        warm = max(1, len(bodies) // 10)
        before = 0.0
        for i, body in enumerate(bodies):
            if i == warm:
                before = server.cpu()
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"request refused: {response.status}")
        conn.close()
        return (server.cpu() - before) / (len(bodies) - warm)
    finally:
        server.stop()


def line_fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares intercept and slope."""
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sum((x - mean_x) ** 2 for x in xs)
    return mean_y - slope * mean_x, slope


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=10_400, help="spans sent at each request size (26 per run)")
    parser.add_argument("--wal", choices=("on", "off"), help="set wal.enabled in the server's configuration")
    parser.add_argument("--fsync", choices=("always", "interval", "never"), help="set wal.fsync (with --wal on)")
    parser.add_argument("--server-command", default=f"{Path(sys.executable).parent / 'mast-otel'} serve")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    command = shlex.split(args.server_command)
    wal = None if args.wal is None else args.wal == "on"
    spans = agent_traces(max(1, args.spans // 26))
    per_request: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        for n, size in enumerate(SIZES):
            template = [encode_spans(spans[i:i + size]).SerializeToString() for i in range(0, len(spans), size)]
            per_request[size] = server_cpu_per_request(command, Path(tmp_name), bodies_with_fresh_ids(template, 7000 + n), wal,
                                                      args.fsync)
    per_span = {size: seconds / size for size, seconds in per_request.items()}
    intercept, slope = line_fit([float(s) for s in SIZES], list(per_request.values()))
    results = {
        "spans_per_size": len(spans),
        **{f"us_per_request_{s}": round(per_request[s] * 1e6, 1) for s in SIZES},
        **{f"us_per_span_{s}": round(per_span[s] * 1e6, 2) for s in SIZES},
        **{f"per_span_vs_512_{s}": round(per_span[s] / per_span[512], 2) for s in SIZES},
        "fit_us_per_request": round(intercept * 1e6, 1),
        "fit_us_per_span": round(slope * 1e6, 2),
    }
    if args.json:
        print(json.dumps(results))
        return
    for key, value in results.items():
        print(f"{key:24s} {value:,}")


if __name__ == "__main__":
    main()
