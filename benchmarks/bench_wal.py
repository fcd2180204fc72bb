"""The write-ahead log: what it costs on ingest, and how fast a restart replays it.

    .venv/bin/python benchmarks/bench_wal.py [--traces 4000] [--rounds 3] [--no-write]

Workload: bench_decode's realistic agent runs (26 spans each, content off) in OTLP protobuf
batches of 512 spans, fresh trace ids per round.

- one client, in process: ``decode_protobuf`` + ``IngestStage.ingest`` with the request body
  logged and its durability waited for (what a receiver does before it answers), against a
  second stage with the log off, request by request in alternating order (so the load of a
  shared machine hits both alike), the median of ``--rounds``, per ``fsync`` policy: the ratio of
  wall-clock time (what a lone client sees: with ``always`` it waits for every fsync) and of
  CPU time (this process) to the log off.
- 8 clients (threads) with ``fsync: always`` against 8 with the log off, one after the
  other in alternating order: the median ratio, acknowledged spans per second and fsyncs per
  request (below 1: requests shared fsyncs).
- replay: a log holding every batch (runs in flight, then a simulated kill); the time a new
  ingest stage takes to start (read, check, decode and buffer every span), per 100,000 spans,
  and as the median ratio to ingesting the same batches with the log off just before.
- automatic garbage collection is off while measuring (a full collection over the buffered
  runs otherwise lands on either side at random: an A/A comparison of two stages without
  the log then varies by ±50%, with it off by ±3%).
- record format: appending the request bytes as received (what the log does) against
  pickling the decoded spans, per span.
- store look-up after a start: within ``retention_seconds`` of its start a stage asks the
  store whether the runs a request brings were diagnosed before the start (so their late
  spans are named rejected); two stages with a store (and the log off), one inside that
  window and one past it, request by request in alternating order: the ratio of wall-clock
  time.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import queue
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import BATCH, agent_traces  # noqa: E402
from bench_ingest import bodies_with_fresh_ids  # noqa: E402
from docblock import write_doc_block  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402

from mast_otel.processors.config import ProcessorConfig  # noqa: E402
from mast_otel.processors.ingest.decode import decode_protobuf  # noqa: E402
from mast_otel.processors.service.pipeline.ingest_stage import IngestStage  # noqa: E402
from mast_otel.processors.service.telemetry.metrics import Metrics  # noqa: E402
from mast_otel.processors.service.store.diagnoses import DiagnosisStore  # noqa: E402
from mast_otel.processors.service.wal import SpanLog  # noqa: E402

DOC = Path(__file__).resolve().parent.parent / "docs" / "processor.md"
THREADS = 8


def _stage(tmp: Path, fsync: str | None, *, store: bool = False) -> tuple[IngestStage, SpanLog | None]:
    """A stage (with the log, unless ``fsync`` is None) whose sweeper is not started: nothing
    runs beside the ingest being measured."""
    name = f"bench-{time.monotonic_ns()}"
    config = ProcessorConfig(
        assembly={"grace_seconds": 600, "idle_timeout_seconds": 600, "max_traces_in_flight": 1_000_000,
                  "max_buffered_bytes": 2**34},  # nothing completes: ingest alone, and every run still in flight at the kill
        store={"enabled": store, "path": str(tmp / f"{name}.sqlite")},
        wal={"enabled": fsync is not None, "directory": str(tmp / name), "fsync": fsync or "always"})
    metrics = Metrics(config.metrics)
    wal = SpanLog(config.wal, config.wal.directory, metrics.registry) if fsync is not None else None
    stage = IngestStage(config, metrics, DiagnosisStore(config.store.path) if store else None, wal=wal)
    if wal is not None:
        wal.start()
    return stage, wal


def _close(stage: IngestStage, wal: SpanLog | None) -> None:
    stage.stop(flush=False)
    if wal is not None:
        wal.shutdown()


def interleaved(tmp: Path, template: list[bytes], fsync: str, salt: int) -> dict[str, float]:
    """Seconds (wall, CPU) spent on each request by a stage with the log and one without,
    request by request in alternating order, so drift in the machine's load hits both alike."""
    off, _ = _stage(tmp, None)
    on, wal = _stage(tmp, fsync)
    totals = {"off_wall": 0.0, "off_cpu": 0.0, "on_wall": 0.0, "on_cpu": 0.0}
    pairs = zip(bodies_with_fresh_ids(template, salt), bodies_with_fresh_ids(template, salt + 1))
    for i, (body_off, body_on) in enumerate(pairs):
        order = ((off, body_off, "off"), (on, body_on, "on"))
        for stage, body, name in order if i % 2 else order[::-1]:
            wall, cpu = time.perf_counter(), time.process_time()
            receipt = stage.ingest(decode_protobuf(body, stage.decode_options), "http", body if name == "on" else None)
            assert stage.durable(receipt) is None
            totals[f"{name}_wall"] += time.perf_counter() - wall
            totals[f"{name}_cpu"] += time.process_time() - cpu
    _close(off, None)
    _close(on, wal)
    return totals


def store_lookup(tmp: Path, template: list[bytes], salt: int) -> float:
    """Wall-clock time of a stage past the look-up window over one inside it (see the docstring)."""
    inside, _ = _stage(tmp, None, store=True)
    past, _ = _stage(tmp, None, store=True)
    past._started_at = float("-inf")  # started long ago: no look-up
    seconds = {"inside": 0.0, "past": 0.0}
    pairs = zip(bodies_with_fresh_ids(template, salt), bodies_with_fresh_ids(template, salt + 1))
    for i, (body_inside, body_past) in enumerate(pairs):
        order = ((inside, body_inside, "inside"), (past, body_past, "past"))
        for stage, body, name in order if i % 2 else order[::-1]:
            started = time.perf_counter()
            stage.ingest(decode_protobuf(body, stage.decode_options), "http")
            seconds[name] += time.perf_counter() - started
    for stage in (inside, past):
        _close(stage, None)
        stage.store.close()
    return seconds["past"] / seconds["inside"]


def interleaved_off(tmp: Path, bodies: list[bytes]) -> list[float]:
    """Seconds per request to ingest ``bodies`` with the log off."""
    stage, _ = _stage(tmp, None)
    times = []
    for body in bodies:
        started = time.perf_counter()
        stage.ingest(decode_protobuf(body, stage.decode_options), "http")
        times.append(time.perf_counter() - started)
    _close(stage, None)
    return times


def concurrent_seconds(tmp: Path, bodies: list[bytes], fsync: str | None, threads: int) -> tuple[float, float]:
    """(wall-clock seconds, fsyncs per request) for ``threads`` clients sharing ``bodies``."""
    stage, wal = _stage(tmp, fsync)
    options = stage.decode_options
    logged = wal is not None
    work: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    for body in bodies:
        work.put(body)
    for _ in range(threads):
        work.put(None)

    def client() -> None:
        while (body := work.get()) is not None:
            receipt = stage.ingest(decode_protobuf(body, options), "http", body if logged else None)
            assert stage.durable(receipt) is None

    workers = [threading.Thread(target=client) for _ in range(threads)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    seconds = time.perf_counter() - started
    fsyncs = (stage.metrics.registry.get_sample_value("mast_wal_fsync_seconds_count") or 0) if logged else 0
    _close(stage, wal)
    return seconds, fsyncs / len(bodies)


def replay(tmp: Path, bodies: list[bytes], spans: int) -> dict:
    """Log every batch, 'kill', and time the next start's replay."""
    stage, wal = _stage(tmp, "never")
    options = stage.decode_options
    for body in bodies:
        stage.ingest(decode_protobuf(body, options), "http", body)
    directory = wal.directory
    os.close(wal._active.fd)  # what a kill leaves: the files, nothing flushed or settled
    os.close(wal._dir_fd)
    wal._active.fd = wal._dir_fd = -1
    log_bytes = sum(p.stat().st_size for p in directory.glob("*.wal"))
    config = stage.config
    metrics = Metrics(config.metrics)
    wal2 = SpanLog(config.wal, directory, metrics.registry)
    stage2 = IngestStage(config, metrics, None, wal=wal2)
    started = time.perf_counter()
    wal2.start()
    stage2.start()
    seconds = time.perf_counter() - started
    replayed = metrics.registry.get_sample_value("mast_wal_replayed_spans_total")
    in_flight = stage2.in_flight
    _close(stage2, wal2)
    return {"seconds": seconds, "replayed_spans": int(replayed or 0), "runs_in_flight": in_flight, "log_bytes": log_bytes}


def record_format(bodies: list[bytes], spans: int) -> dict:
    """µs per span: writing the body as received vs pickling the decoded spans (then writing that)."""
    with tempfile.TemporaryFile() as f:
        fd = f.fileno()
        started = time.perf_counter()
        for body in bodies:
            os.write(fd, body)
        raw = time.perf_counter() - started
        decoded = [decode_protobuf(b).spans for b in bodies]
        started = time.perf_counter()
        for batch in decoded:
            os.write(fd, pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL))
        pickled = time.perf_counter() - started
    pickled_bytes = sum(len(pickle.dumps(b, protocol=pickle.HIGHEST_PROTOCOL)) for b in decoded)
    return {"raw_us_per_span": round(raw / spans * 1e6, 3), "pickled_us_per_span": round(pickled / spans * 1e6, 3),
            "raw_bytes_per_span": round(sum(map(len, bodies)) / spans), "pickled_bytes_per_span": round(pickled_bytes / spans)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    gc.disable()
    finished = agent_traces(args.traces)
    template = [encode_spans(finished[i:i + BATCH]).SerializeToString() for i in range(0, len(finished), BATCH)]
    spans = len(finished)
    rounds: dict[str, list[dict[str, float]]] = {}  # fsync policy -> one interleaved() per round
    with tempfile.TemporaryDirectory(prefix="mast-bench-wal-", dir=os.environ.get("MAST_BENCH_DIR")) as tmp:
        for n in range(args.rounds):
            for k, fsync in enumerate(("never", "interval", "always")):
                gc.collect()
                rounds.setdefault(fsync, []).append(interleaved(Path(tmp), template, fsync, 1000 * n + 10 * k))
        shared: list[dict[str, tuple[float, float]]] = []  # per round: log off / always -> (seconds, fsyncs per request)
        for n in range(args.rounds):
            pair: dict[str, tuple[float, float]] = {}
            for fsync in (None, "always") if n % 2 == 0 else ("always", None):
                gc.collect()
                pair[fsync or "log off"] = concurrent_seconds(Path(tmp), bodies_with_fresh_ids(template, 5000 + 2 * n + bool(fsync)),
                                                              fsync, THREADS)
            shared.append(pair)
        replays = []
        for n in range(args.rounds):  # each replay next to an ingest of the same batches with the log off
            gc.collect()
            ingest = sum(interleaved_off(Path(tmp), bodies_with_fresh_ids(template, 8000 + n)))
            gc.collect()
            replays.append({**replay(Path(tmp), bodies_with_fresh_ids(template, 9000 + n), spans), "ingest_seconds": ingest})
        lookups = []
        for n in range(args.rounds):
            gc.collect()
            lookups.append(store_lookup(Path(tmp), template, 11000 + 2 * n))
    fastest = min(replays, key=lambda r: r["seconds"])
    result = {
        "spans": spans, "requests": len(template), "spans_per_request": BATCH,
        "one_client": {fsync: {
            "ratio_to_log_off": round(statistics.median(t["off_wall"] / t["on_wall"] for t in ts), 3),
            "cpu_ratio_to_log_off": round(statistics.median(t["off_cpu"] / t["on_cpu"] for t in ts), 3),
            "spans_per_s": round(max(spans / t["on_wall"] for t in ts)),
            "spans_per_s_log_off": round(max(spans / t["off_wall"] for t in ts))} for fsync, ts in rounds.items()},
        f"{THREADS}_clients_fsync_always": {
            "ratio_to_log_off": round(statistics.median(p["log off"][0] / p["always"][0] for p in shared), 3),
            "spans_per_s": round(max(spans / p["always"][0] for p in shared)),
            "spans_per_s_log_off": round(max(spans / p["log off"][0] for p in shared)),
            "fsyncs_per_request": round(statistics.median(p["always"][1] for p in shared), 3)},
        "replay_seconds_per_100k_spans": round(fastest["seconds"] / fastest["replayed_spans"] * 100_000, 2),
        "replay_ratio_to_ingest_log_off": round(statistics.median(r["ingest_seconds"] / r["seconds"] for r in replays), 3),
        "replay": {k: v for k, v in fastest.items() if k != "ingest_seconds"},
        "record_format": record_format(template, spans),
        "store_lookup_after_start_ratio": round(statistics.median(lookups), 3),
    }
    result["replay"]["seconds"] = round(result["replay"]["seconds"], 3)
    print(json.dumps(result, indent=2))
    if not args.no_write:
        write_doc_block("wal-bench", "```json\n" + json.dumps(result, indent=2) + "\n```", DOC)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
