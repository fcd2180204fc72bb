"""Peak memory of a real ``mast-otel serve`` while clients read severity from a store of many models.

    .venv/bin/python benchmarks/bench_severity.py [--models N] [--concurrent C] [--rounds R] [--write]

A SQLite store is filled with one run per model for ``--models`` models (default 48,000; a
third failed with FM-1.3, the rest of unknown outcome), then ``serve`` is started on it and
``--concurrent`` clients (default 4) each ask ``/v1/severity``, ``/v1/severity?limit=200``
(the largest page) and the ``/severity`` page, ``--rounds`` times. Figures: the process's
resident memory when ready, its peak (``VmHWM`` from /proc, over the whole run), the bytes of
each answer and the slowest answer. ``--write`` puts the table into docs/reliability.md.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from docblock import write_doc_block

from mast_otel.processors.model import Diagnosis, Finding
from mast_otel.processors.service.store.diagnoses import DiagnosisStore

PATHS = ("/v1/severity", "/v1/severity?limit=200", "/severity")


def fill(path: Path, models: int) -> None:
    store = DiagnosisStore(path)
    now = time.time()
    store.save_many(
        (Diagnosis(trace_id=f"{i:032x}", findings=[Finding("FM-1.3", 0.9, "looped", ("a" * 16,))] if i % 3 == 0 else [],
                   fatal=False, model=f"model-{i:05d}", outcome="failure" if i % 3 == 0 else None,
                   diagnosed_at=now - i), None)
        for i in range(models))
    store.close()


def memory_kib(pid: int, field: str) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"^{field}:\s+(\d+) kB", status, re.M).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=48_000)
    parser.add_argument("--concurrent", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write the table into docs/reliability.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "d.sqlite"
        fill(store, args.models)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAST_OTEL_")}
        proc = subprocess.Popen([sys.executable, "-m", "mast_otel.processors.cli", "serve", "--store", str(store),
                                 "--http-port", "0", "--no-grpc", "--log-level", "WARNING"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            line = ""
            while "ready:" not in line:
                line = proc.stdout.readline()
                if not line:
                    raise SystemExit(f"serve exited: {proc.wait()}")
            url = re.search(r"API (http://\S+),", line).group(1)
            ready_rss = memory_kib(proc.pid, "VmRSS")
            sizes: dict[str, int] = {}
            slowest = 0.0
            lock = threading.Lock()

            def client() -> None:
                nonlocal slowest
                with httpx.Client(timeout=600) as http:
                    for _ in range(args.rounds):
                        for path in PATHS:
                            start = time.monotonic()
                            answer = http.get(url + path)
                            answer.raise_for_status()
                            with lock:
                                sizes[path] = len(answer.content)
                                slowest = max(slowest, time.monotonic() - start)

            threads = [threading.Thread(target=client) for _ in range(args.concurrent)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            peak = memory_kib(proc.pid, "VmHWM")
        finally:
            proc.terminate()
            proc.wait(60)
    table = "\n".join([
        f"| stored models | concurrent clients | RSS when ready | peak RSS | {' | '.join(f'`{p}` bytes' for p in PATHS)} | slowest answer |",
        "|---|---|---|---|" + "---|" * len(PATHS) + "---|",
        f"| {args.models:,} | {args.concurrent} | {ready_rss / 1024:.0f} MB | {peak / 1024:.0f} MB | "
        + " | ".join(f"{sizes[p]:,}" for p in PATHS) + f" | {slowest:.2f} s |",
    ])
    print(table)
    if args.write:
        write_doc_block("severity-memory", table, Path(__file__).parent.parent / "docs" / "reliability.md")


if __name__ == "__main__":
    main()
