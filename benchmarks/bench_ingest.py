"""Processor ingest: throughput over OTLP/HTTP, where the time goes, memory per span, latency.

    .venv/bin/python benchmarks/bench_ingest.py [--traces N] [--profile]

Workload: bench_decode's realistic agent traces (1 agent span, 10 model calls, 15 tool calls
per run, content off) in OTLP protobuf batches of 512 spans, with fresh trace ids per round.

- floor: ``ExportTraceServiceRequest.FromString`` + every span's attributes read into a dict,
  the least any receiver pays (bench_decode's definition), in this process;
- in-process ingest: ``decode_protobuf`` + ``IngestStage.ingest`` (dedup, buffering, live
  detection), then completion (rule diagnosis, metrics, SQLite) measured separately;
- OTLP/HTTP: the whole server (uvicorn + FastAPI) in this process pinned to one core, fed by
  a load generator in a subprocess pinned to the other core over two keep-alive connections;
  spans per wall-clock second acknowledged, and per CPU second the server process spent (the
  server's own cost, unaffected by waits for a generator whose core other jobs share);
- memory: tracemalloc bytes per buffered span after decode + ingest, content off;
- latency: root span's request acknowledged -> diagnosis stored, grace 0 (p50/p95).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import http.client
import json
import os
import pstats
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import BATCH, agent_traces, floor  # noqa: E402  (same workload as the decoder's benchmark)
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from mast_otel.processors.config import ProcessorConfig  # noqa: E402
from mast_otel.processors.ingest.decode import decode_protobuf  # noqa: E402
from mast_otel.processors.service.telemetry.metrics import Metrics  # noqa: E402
from mast_otel.processors.service.pipeline.ingest_stage import IngestStage  # noqa: E402
from mast_otel.processors.service.store.diagnoses import DiagnosisStore  # noqa: E402

SPANS_PER_RUN = 26


def bodies_with_fresh_ids(template: list[bytes], salt: int) -> list[bytes]:
    """The same batches with every trace id changed, so a round never looks like a retry."""
    return with_fresh_trace_ids(template, salt, ExportTraceServiceRequest.FromString,
                                lambda request: (span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans))


def with_fresh_trace_ids(template: list[bytes], salt: int, parse: Callable, items: Callable) -> list[bytes]:
    """Each body parsed, the trace id of every item (``items(request)``: its spans, or its log
    records) given ``salt`` as its first four bytes, and serialized again."""
    out = []
    for body in template:
        request = parse(body)
        for item in items(request):
            item.trace_id = salt.to_bytes(4, "big") + item.trace_id[4:]
        out.append(request.SerializeToString())
    return out


def config_for(tmp: Path, **assembly) -> ProcessorConfig:
    return ProcessorConfig(
        receiver={"host": "127.0.0.1", "http_port": 0, "grpc_enabled": False},
        assembly={"idle_timeout_seconds": 600, "max_traces_in_flight": 100_000, **assembly},
        store={"path": str(tmp / f"bench-{time.monotonic_ns()}.sqlite")},
    )


def floor_rate(template: list[bytes], repeats: int = 3, clock: Callable[[], float] = time.perf_counter) -> float:
    """The floor's spans per second of ``clock`` (wall, or this process's CPU time), best of
    ``repeats`` passes: measured next to each round, since the machine is shared and only
    ratios taken close together compare."""
    spans = sum(floor(b) for b in template)
    best = 0.0
    for _ in range(repeats):
        start = clock()
        for body in template:
            floor(body)
        best = max(best, spans / max(clock() - start, 1e-9))
    return best


def in_process(template: list[bytes], tmp: Path, rounds: int, profile: bool) -> dict:
    """decode + ingest spans/s and its ratio to the floor (best round); completion runs/s."""
    spans = sum(floor(b) for b in template)
    best_ingest = best_finish = best_ratio = 0.0
    profiler = cProfile.Profile() if profile else None
    for r in range(rounds):
        bodies = bodies_with_fresh_ids(template, 1000 + r)
        config = config_for(tmp, grace_seconds=0)
        pipeline = IngestStage(config, Metrics(config.metrics), DiagnosisStore(config.store.path))
        options = pipeline.decode_options
        gc.collect()
        base = floor_rate(template)
        if profiler and r == rounds - 1:
            profiler.enable()
        start = time.perf_counter()
        for body in bodies:
            pipeline.ingest(decode_protobuf(body, options), "http")
        ingest = time.perf_counter() - start
        if profiler and r == rounds - 1:
            profiler.disable()
        start = time.perf_counter()
        finished = pipeline.sweep()
        finish = time.perf_counter() - start
        assert finished == spans // SPANS_PER_RUN, finished
        best_ingest = max(best_ingest, spans / ingest)
        best_ratio = max(best_ratio, spans / ingest / base)
        best_finish = max(best_finish, finished / finish)
        pipeline.store.close()
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(18)
    return {"ingest_spans_per_s": best_ingest, "ingest_vs_floor": best_ratio, "completion_runs_per_s": best_finish}


def breakdown(template: list[bytes], tmp: Path, rounds: int) -> dict:
    """Microseconds per span of each in-process stage (best round): where ingest time goes."""
    from mast_otel.processors.detectors import LiveDetection
    from mast_otel.processors.service.pipeline.assembler import Assembler

    spans = sum(floor(b) for b in template)
    best: dict[str, float] = {}
    for r in range(rounds):
        bodies = bodies_with_fresh_ids(template, 3000 + r)
        config = config_for(tmp)
        timings = {"floor_us_per_span": 1e6 / floor_rate(template, 1)}
        start = time.perf_counter()
        decoded = [decode_protobuf(b) for b in bodies]
        timings["decode_us_per_span"] = (time.perf_counter() - start) * 1e6 / spans
        for name, live in (("assemble_us_per_span", None), ("assemble_with_live_us_per_span", lambda: LiveDetection(config.detection))):
            assembler = Assembler(config.assembly, live)
            start = time.perf_counter()
            for result in decoded:
                assembler.add(result.spans, 0.0)
            timings[name] = (time.perf_counter() - start) * 1e6 / spans
        for key, value in timings.items():
            best[key] = min(best.get(key, value), value)
    best["live_detection_us_per_span"] = best.pop("assemble_with_live_us_per_span") - best["assemble_us_per_span"]
    return best


def memory_per_span(template: list[bytes], tmp: Path) -> float:
    """tracemalloc bytes held per buffered span (decoded, assembled, live state), content off."""
    config = config_for(tmp, grace_seconds=600, max_buffered_bytes=1 << 40)
    pipeline = IngestStage(config, Metrics(config.metrics), DiagnosisStore(config.store.path))
    bodies = bodies_with_fresh_ids(template, 7)
    options = pipeline.decode_options
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for body in bodies:
        pipeline.ingest(decode_protobuf(body, options), "http")
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    buffered = sum(len(b.spans) for b in pipeline._assembler.in_flight.values())
    pipeline.store.close()
    return held / buffered


def load_generator(url: str, path: str, connections: int) -> None:
    """Subprocess entry: POST every body in ``path`` (length-prefixed) and print the elapsed time."""
    data = Path(path).read_bytes()
    bodies, pos = [], 0
    while pos < len(data):
        size = int.from_bytes(data[pos:pos + 4], "big")
        bodies.append(data[pos + 4:pos + 4 + size])
        pos += 4 + size
    host, port = url.removeprefix("http://").split(":")
    start = time.perf_counter()
    failures = post_all(host, int(port), bodies, connections)
    print(json.dumps({"seconds": time.perf_counter() - start, "failures": failures}))


def post_all(host: str, port: int, bodies: list[bytes], connections: int) -> list[int]:
    """POST every body to /v1/traces over ``connections`` keep-alive connections; the statuses other than 200."""
    failures: list[int] = []

    def send(share: list[bytes]) -> None:
        conn = http.client.HTTPConnection(host, port)
        for body in share:
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                failures.append(response.status)
        conn.close()

    threads = [threading.Thread(target=send, args=(bodies[i::connections],)) for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def over_http(template: list[bytes], tmp: Path, rounds: int, grace: float) -> dict:
    """Spans/s acknowledged over OTLP/HTTP (best round) and until every run was diagnosed.

    With a long ``grace`` diagnosis waits until the load is in (ingest alone is timed); with
    a short one it competes with ingest for the core (the sustained figure).
    """
    from mast_otel.processors.service.server import ProcessorServer

    spans = sum(floor(b) for b in template)
    runs = spans // SPANS_PER_RUN
    cpus = sorted(os.sched_getaffinity(0))
    best_ack = best_done = best_ratio = best_cpu = best_cpu_ratio = 0.0
    for r in range(rounds):
        bodies = bodies_with_fresh_ids(template, 2000 + r)
        payload = tmp / "bodies.bin"
        payload.write_bytes(b"".join(len(b).to_bytes(4, "big") + b for b in bodies))
        config = config_for(tmp, grace_seconds=grace, sweep_interval_seconds=0.1)
        gc.collect()  # earlier stages' pipelines are cyclic garbage: collect it now, not mid-measurement
        server = ProcessorServer(config, builtin_components=False)
        if len(cpus) > 1:
            os.sched_setaffinity(0, {cpus[0]})  # the server's threads inherit this
        server.start()
        try:
            command = [sys.executable, str(Path(__file__).resolve()), "--load", server.http_url, str(payload)]
            if len(cpus) > 1:
                command = ["taskset", "-c", str(cpus[1]), *command]
            base = floor_rate(template)
            started, cpu_before = time.perf_counter(), time.process_time()
            result = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
            cpu = time.process_time() - cpu_before  # the server's own work: its threads, not the generator
            assert not result["failures"], result["failures"][:5]
            while grace <= 1 and server.store.count() < runs:
                time.sleep(0.01)
            done = time.perf_counter() - started  # stop() below diagnoses what is still buffered
        finally:
            server.stop()
            os.sched_setaffinity(0, set(cpus))
        best_ack = max(best_ack, spans / result["seconds"])
        best_ratio = max(best_ratio, spans / result["seconds"] / base)
        best_done = max(best_done, spans / done)
        best_cpu = max(best_cpu, spans / cpu)
        best_cpu_ratio = max(best_cpu_ratio, spans / cpu / base)
    if grace > 1:
        return {"http_spans_per_s": best_ack, "http_vs_floor": best_ratio,
                "http_spans_per_cpu_s": best_cpu, "http_cpu_vs_floor": best_cpu_ratio}
    return {"http_sustained_spans_per_s": best_ack, "http_sustained_spans_per_s_until_diagnosed": best_done}


def latency(template: list[bytes], tmp: Path, traces: int = 200) -> dict:
    """Seconds from the acknowledgement of a run's last request to its stored diagnosis (grace 0)."""
    from mast_otel.processors.service.server import ProcessorServer

    spans = [s for s in agent_traces(traces)]
    by_trace: dict[int, list] = {}
    for s in spans:
        by_trace.setdefault(s.context.trace_id, []).append(s)
    config = config_for(tmp, grace_seconds=0, sweep_interval_seconds=0.05)
    server = ProcessorServer(config, builtin_components=False)
    done: dict[str, float] = {}
    server.ingest.add_listener(lambda run, d: done.setdefault(run.trace_id, time.perf_counter()))
    sent: dict[str, float] = {}
    with server:
        host, port = server.http_url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port))
        for trace_id, trace_spans in by_trace.items():
            body = encode_spans(trace_spans).SerializeToString()
            conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
            conn.getresponse().read()
            sent[format(trace_id, "032x")] = time.perf_counter()
            time.sleep(0.005)  # a trickle, not a flood: latency, not queueing
        deadline = time.monotonic() + 30
        while len(done) < len(sent) and time.monotonic() < deadline:
            time.sleep(0.01)
    waits = sorted(done[t] - sent[t] for t in sent if t in done)
    return {"latency_p50_s": waits[len(waits) // 2], "latency_p95_s": waits[int(len(waits) * 0.95)], "latency_runs": len(waits)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=1000, help="runs per round (26 spans each)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the in-process ingest path")
    parser.add_argument("--load", nargs=2, metavar=("URL", "FILE"), help=argparse.SUPPRESS)
    parser.add_argument("--connections", type=int, default=2, help="load generator connections")
    args = parser.parse_args()
    if args.load:
        load_generator(*args.load, connections=args.connections)
        return
    spans = agent_traces(args.traces)
    template = [encode_spans(spans[i:i + BATCH]).SerializeToString() for i in range(0, len(spans), BATCH)]
    count, spans = len(spans), None  # the SDK's span objects would weigh on the server's garbage collector
    gc.collect()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        results = {"spans_per_round": count, "floor_spans_per_s": floor_rate(template, 5)}
        results.update(breakdown(template, tmp, args.rounds))
        results.update(in_process(template, tmp, args.rounds, args.profile))
        results.update(over_http(template, tmp, args.rounds, grace=3600))
        results.update(over_http(template, tmp, 1, grace=0.2))
        results["bytes_per_buffered_span"] = memory_per_span(template, tmp)
        results.update(latency(template, tmp))
    for key, value in results.items():
        print(f"{key:36s} {value:,.3f}" if isinstance(value, float) else f"{key:36s} {value:,}")


if __name__ == "__main__":
    main()
