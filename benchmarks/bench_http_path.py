"""The HTTP side of an OTLP/HTTP export request alone: server CPU per request through the real
receiver (uvicorn with our protocol, the event loop, ``ExportPath``, the export handler with its
body read, bytes-in-flight budget and answer), with decoding and ingest replaced by stubs.

    .venv/bin/python benchmarks/bench_http_path.py [--requests N] [--rounds R] [--body-bytes B]
        [--event-loop auto|asyncio|uvloop] [--baseline OTHER/.venv/bin/python --pairs P] [--bare]

A client in another process posts ``--requests`` bodies of ``--body-bytes`` (the content-on
corpus averages 131 KB) over two keep-alive connections, as ``bench_end_to_end.py`` does; the
figure is this process's CPU time (all its threads) per request. ``profile_serve.py`` counts as
HTTP whatever runs under the event loop outside a named stage (the ingest call's own work among
it), so its share reads higher than this. With ``--baseline``, that build's python runs the
same measurement in children alternating with this one's (``alternating.py``). ``--bare`` also
times, round by round in alternating order, a bare ASGI app on a receiver of its own (it reads the
body and answers 200): what uvicorn, the event loop and the sockets cost without the export path.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alternating import alternate, median_of, pair_ratios  # noqa: E402

# The client, in a process of its own (its CPU is not the server's): bench_ingest's keep-alive POSTs.
CLIENT = r"""
import sys
sys.path.insert(0, sys.argv[4])
from bench_ingest import post_all
port, count, size = (int(a) for a in sys.argv[1:4])
refused = post_all("127.0.0.1", port, [bytes(range(256)) * (size // 256)] * count, 2)
sys.exit(f"refused: {refused[:5]}" if refused else 0)
"""


def child(requests: int, rounds: int, body_bytes: int, event_loop: str | None, bare: bool = False) -> list[dict[str, float]]:
    """This build's receiver on a free port, ``rounds`` rounds (the first a warm-up, dropped by the caller)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    from mast_otel.processors.config import ProcessorConfig
    from mast_otel.processors.service.pipeline.ingest_stage import Receipt
    from mast_otel.processors.service.receivers.components import HTTPReceiver
    from mast_otel.processors.service.receivers.drain import Drain
    from mast_otel.processors.service.receivers.otlp_export import ExportPath, Signal, export_handler
    from mast_otel.processors.service.server import ProcessorServer

    out: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        receiver_config = {"grpc_enabled": False, "http_port": 0, **({"event_loop": event_loop} if event_loop else {})}
        config = ProcessorConfig.model_validate({"store": {"path": str(Path(tmp) / "store.sqlite")}, "receiver": receiver_config})
        server = ProcessorServer(config, builtin_components=False)  # its ingest stage: admission, the budget
        signal = Signal("/v1/traces", "body", lambda body, options: None, lambda body, options: None,
                        lambda decoded, protocol, body, as_json=False: Receipt(),
                        lambda decoded, dropped, protocol, client: None, ExportTraceServiceResponse())
        export = ExportPath(export_handler(signal, server.ingest, config, server.auth_throttle), Drain())
        receiver = HTTPReceiver(export, config.receiver)
        receiver.start()
        bare_receiver = HTTPReceiver(bare_app, config.receiver) if bare else None
        if bare_receiver is not None:
            bare_receiver.start()

        def timed(port: int | None) -> float:
            before = time.process_time()
            subprocess.run([sys.executable, "-c", CLIENT, str(port), str(requests), str(body_bytes),
                            str(Path(__file__).resolve().parent)], check=True)
            return (time.process_time() - before) / requests * 1e6

        try:
            for r in range(rounds):
                figures: dict[str, float] = {}
                for name, what in (("us_per_request", receiver), ("bare_us_per_request", bare_receiver))[::1 if r % 2 == 0 else -1]:
                    if what is not None:
                        figures[name] = timed(what.port)
                out.append(figures)
        finally:
            receiver.shutdown(5)
            if bare_receiver is not None:
                bare_receiver.shutdown(5)
            server.shutdown()
    return out


async def bare_app(scope: dict, receive, send) -> None:  # type: ignore[no-untyped-def]
    """The least an ASGI app can do for an export request on the same uvicorn: read the body
    (joined, as the export path does) and answer 200 with an empty protobuf body."""
    parts, more = [], True
    while more:
        message = await receive()
        parts.append(message.get("body", b""))
        more = message.get("more_body", False)
    b"".join(parts)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/x-protobuf"), (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per process (the first is dropped)")
    parser.add_argument("--body-bytes", type=int, default=130_000)
    parser.add_argument("--event-loop", choices=("auto", "asyncio", "uvloop"), help="receiver.event_loop (unset: the build's default)")
    parser.add_argument("--baseline", help="another build's python, measured alternately with this one")
    parser.add_argument("--pairs", type=int, default=3, help="with --baseline: processes per build")
    parser.add_argument("--bare", action="store_true",
                        help="also time a bare ASGI app (read the body, answer 200) on the same uvicorn, alternating")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.requests, args.rounds, args.body_bytes, args.event_loop, args.bare)))
        return
    forwarded = ["--requests", str(args.requests), "--rounds", str(args.rounds), "--body-bytes", str(args.body_bytes)]
    if args.event_loop:
        forwarded += ["--event-loop", args.event_loop]
    if args.bare:
        forwarded.append("--bare")
    builds = {"this": sys.executable, **({"baseline": args.baseline} if args.baseline else {})}
    kept = alternate(builds, args.pairs if args.baseline else 1, str(Path(__file__).resolve()), forwarded)
    for name, rounds in kept.items():
        print(f"{name}: {median_of(rounds, 'us_per_request'):.0f} µs of server CPU per request "
              f"(median of {sum(len(r) for r in rounds)} rounds of {args.requests})")
    if args.baseline:
        print(pair_ratios(kept, "us_per_request"))
    else:
        print("rounds:", ", ".join(f"{r['us_per_request']:.0f}" for r in kept["this"][0]),
              f"(median {statistics.median(r['us_per_request'] for r in kept['this'][0]):.0f})")
    if args.bare:
        own = [r["us_per_request"] / r["bare_us_per_request"] for r in kept["this"][0]]
        print(f"bare ASGI app: {median_of(kept['this'], 'bare_us_per_request'):.0f} µs per request; "
              f"the export path / bare, median of the rounds' ratios: {statistics.median(own):.2f}")


if __name__ == "__main__":
    main()
