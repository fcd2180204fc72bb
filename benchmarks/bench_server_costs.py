"""Where the server process's CPU goes beyond the pipeline's work: user and system CPU, page
faults and the garbage collector's time per span, end to end on the content-on corpus, for
server variants alternating in one session.

    .venv/bin/python benchmarks/bench_server_costs.py \\
        --variant "main=/work/base/.venv/bin/mast-otel serve" \\
        --variant "mmap-1M=env MALLOC_MMAP_THRESHOLD_=1048576 MALLOC_ARENA_MAX=2 .venv/bin/mast-otel serve" \\
        [--rounds 4] [--traces 600] [--passes 1] [--connections 2] [--ingest-only] [--gc-times] [--json]

A variant is ``LABEL=COMMAND``: a server command (another build, or ``env VAR=VALUE ...`` in
front for a setting read from the environment). Each figure is one fresh server, as in
``compare_builds.py`` (``bench_end_to_end.end_to_end``'s workload and end): this process sends
the corpus's requests and waits until every run is stored; the server's counters from
``/proc/<pid>/stat`` (utime, stime, minflt, majflt) are read before the first request and after
the last run is stored. Rounds alternate the variants' order; every ratio is taken within a
round against the first variant, and the medians over rounds are printed.

``--passes N`` sends the workload N times to each server (fresh trace ids each time) and reports
each pass apart (``user@2`` ...) with the median of pass N / pass 1: what a server that has
seen such traffic before (the decoder's memory of repeated attributes filled, the code warm)
costs, against the fresh server every other end-to-end benchmark starts. ``--ingest-only``
holds every run back (``assembly.grace_seconds`` 3600): the figure ends with the last answer.

``--gc-times`` starts each server with a ``sitecustomize`` (on ``PYTHONPATH``) that times every
collection through ``gc.callbacks`` and every ``decode_protobuf`` call (its thread's CPU) and
writes the totals to a file five times a second: the collector's seconds and passes per
generation and the decoder's seconds in the same window (the timing itself costs a little, the
same in every variant); then the same decode of the same requests in this process, for
comparison (``decode_seconds`` against "decode_protobuf in this process").
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_end_to_end import TICKS, Server, corpus_requests, send  # noqa: E402
from bench_ingest import bodies_with_fresh_ids  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

GC_TIMER = '''
import gc, os, threading, time
_path = os.environ.get("MAST_BENCH_GC_TIMES")
if _path:
    _totals = {"seconds": [0.0, 0.0, 0.0], "passes": [0, 0, 0]}
    _started = [0.0]
    def _timer(phase, info):
        if phase == "start":
            _started[0] = time.process_time()
        else:
            g = info["generation"]
            _totals["seconds"][g] += time.process_time() - _started[0]
            _totals["passes"][g] += 1
    gc.callbacks.append(_timer)
    def _write():
        import json
        while True:
            time.sleep(0.2)
            with open(_path + ".tmp", "w") as f:
                json.dump(_totals, f)
            os.replace(_path + ".tmp", _path)
    threading.Thread(target=_write, daemon=True).start()
    if os.environ.get("MAST_BENCH_DECODE_TIMES"):  # decode_protobuf's own CPU (its thread's), on the receivers' path
        import mast_otel.processors.ingest.decode as _decode
        _plain = _decode.decode_protobuf
        _totals["decode"] = 0.0
        def _timed_decode(body, options=None):
            started = time.thread_time()
            try:
                return _plain(body, options)
            finally:
                _totals["decode"] += time.thread_time() - started
        _decode.decode_protobuf = _timed_decode
'''


def counters(pid: int) -> dict[str, float]:
    """user and system CPU seconds, minor and major page faults of a process (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return {"user": int(fields[11]) / TICKS, "system": int(fields[12]) / TICKS,
            "minflt": float(fields[7]), "majflt": float(fields[9])}


def gc_totals(path: Path) -> dict[str, float]:
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    out = {f"gc{g}_seconds": s for g, s in enumerate(data["seconds"])}
    if "decode" in data:
        out["decode_seconds"] = data["decode"]
    out.update({f"gc{g}_passes": float(n) for g, n in enumerate(data["passes"])})
    return out


def one_figure(command: list[str], tmp: Path, passes: list[list[bytes]], runs: int, gc_times: bool,
               ingest_only: bool = False, connections: int = 2) -> dict[str, float]:
    """The server's counters spent on each pass of the workload (``passes``: its requests, each
    pass with trace ids of its own), one after the other on the same server: from the first
    request until every run of the pass is stored, or (``ingest_only``) until the last request is
    answered, no run finishing meanwhile. The second pass's figures are named ``user@2`` and so on."""
    gc_file = tmp / f"gc-{time.monotonic_ns()}.json"
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "MAST_BENCH_GC_TIMES", "MAST_BENCH_DECODE_TIMES")}
    if gc_times:
        os.environ["MAST_BENCH_DECODE_TIMES"] = "1"
        os.environ["PYTHONPATH"] = str(tmp / "site") + (os.pathsep + saved["PYTHONPATH"] if saved["PYTHONPATH"] else "")
        os.environ["MAST_BENCH_GC_TIMES"] = str(gc_file)
    try:
        server = Server(command, tmp, grace=3600 if ingest_only else None, wal=None)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    out: dict[str, float] = {}
    try:
        time.sleep(0.5 if gc_times else 0.0)
        for number, bodies in enumerate(passes, 1):
            before, gc_before = counters(server.process.pid), gc_totals(gc_file)
            send(server.port, bodies, connections)
            deadline = time.monotonic() + 600
            while not ingest_only and server.stored() < runs * number:
                if time.monotonic() > deadline:
                    raise RuntimeError("runs not stored within 600 s")
                time.sleep(0.25)
            after = counters(server.process.pid)
            if gc_times:
                time.sleep(0.5)
            gc_after = gc_totals(gc_file)
            figures = {k: after[k] - before[k] for k in after}
            figures.update({k: gc_after[k] - gc_before.get(k, 0.0) for k in gc_after})
            out.update({(k if number == 1 else f"{k}@{number}"): v for k, v in figures.items()})
        return out
    finally:
        server.stop()


def decode_in_process(template: list[bytes], passes: int) -> list[float]:
    """``decode_protobuf``'s CPU seconds per pass over the requests in this process, with a fresh
    ingest stage's decode options (the server's), the decoder's memory starting empty as in a
    fresh server: the same stage measured without the server around it."""
    from bench_ingest import config_for

    from mast_otel.processors.ingest import decode
    from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
    from mast_otel.processors.service.telemetry.metrics import Metrics

    with tempfile.TemporaryDirectory() as tmp:
        config = config_for(Path(tmp))
        options = IngestStage(config, Metrics(config.metrics)).decode_options
    decode._REMEMBERED.clear()
    out = []
    for number in range(passes):
        bodies = bodies_with_fresh_ids(template, 8000 + number)
        started = time.thread_time()
        for body in bodies:
            decode.decode_protobuf(body, options)
        out.append(time.thread_time() - started)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", required=True, metavar="LABEL=COMMAND",
                        help="a server command to measure (the first is the one others are compared with)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--traces", type=int, default=600)
    parser.add_argument("--corpus", nargs="+", type=Path,
                        default=[ROOT / "tests" / "frameworks" / "corpus", ROOT / "tests" / "teams" / "corpus"])
    parser.add_argument("--gc-times", action="store_true", help="time the collector's passes in each server")
    parser.add_argument("--ingest-only", action="store_true",
                        help="runs wait (assembly.grace_seconds 3600): the figure ends with the last answer")
    parser.add_argument("--connections", type=int, default=2,
                        help="keep-alive connections the requests are sent over (2, as bench_end_to_end.py)")
    parser.add_argument("--passes", type=int, default=1,
                        help="the workload this many times on each server (the later passes' figures: a warm server)")
    parser.add_argument("--json", action="store_true", help="also print every figure as JSON")
    args = parser.parse_args()
    variants = dict(v.split("=", 1) for v in args.variant)
    labels = list(variants)
    template, spans, runs = corpus_requests(args.corpus, args.traces)
    figures: list[dict[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "site").mkdir()
        (tmp / "site" / "sitecustomize.py").write_text(GC_TIMER)
        for r in range(args.rounds):
            row: dict[str, dict[str, float]] = {}
            for i, label in enumerate(labels if r % 2 == 0 else labels[::-1]):
                passes = [bodies_with_fresh_ids(template, 9000 + 100 * r + 10 * p + i) for p in range(args.passes)]
                row[label] = {k: v if "passes" in k else v / spans
                              for k, v in one_figure(shlex.split(variants[label]), tmp, passes, runs, args.gc_times,
                                                        args.ingest_only, args.connections).items()}
                print(f"round {r + 1} {label}: " + ", ".join(f"{k} {v * 1e6 if 'seconds' in k or k.split('@')[0] in ('user', 'system') else v:.2f}"
                                                          for k, v in row[label].items()), file=sys.stderr)
            figures.append(row)
    if args.gc_times:
        here = decode_in_process(template, max(2, args.passes))
        print("decode_protobuf in this process, fresh memory: " + ", ".join(
            f"pass {n} {t / spans * 1e6:.1f} us/span" for n, t in enumerate(here, 1)))
    keys = list(figures[0][labels[0]])
    print(f"Per span, median of {args.rounds} alternating rounds ({spans} spans a round; CPU and collector in us and faults per span, the collector's passes per round):\n")
    print("| variant | " + " | ".join(keys) + " | CPU / first |")
    print("|---|" + "---|" * (len(keys) + 1))
    for label in labels:
        cells = []
        for k in keys:
            value = statistics.median(f[label].get(k, 0.0) for f in figures)
            cells.append(f"{value * 1e6:.1f}" if "seconds" in k or k.split("@")[0] in ("user", "system") else f"{value:.0f}" if "passes" in k else f"{value:.2f}")
        ratio = statistics.median((f[label]["user"] + f[label]["system"]) / (f[labels[0]]["user"] + f[labels[0]]["system"])
                                  for f in figures)
        later = "".join(f", pass {p} / pass 1 " + format(statistics.median(
            (f[label][f"user@{p}"] + f[label][f"system@{p}"]) / (f[label]["user"] + f[label]["system"]) for f in figures), ".3f")
            for p in range(2, args.passes + 1))
        print(f"| {label} | " + " | ".join(cells) + f" | {ratio:.3f}{later} |")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
