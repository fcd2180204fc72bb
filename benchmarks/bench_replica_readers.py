"""The issue's reproduction of readers starving the pipeline: three ``mast-otel serve`` replicas
on one real PostgreSQL store behind a trace-id router, ``--readers`` threads (default 48)
reading deep pages and the severity page from two of them, while runs are re-routed halfway
between those two and each gets an outcome posted to the replica that did not diagnose it.

    .venv/bin/python benchmarks/bench_replica_readers.py [--readers N] [--runs R]

Prints what came of it as JSON: runs counted over the replicas' ``mast_traces_total`` (one
each is right), each run's stored span count as every replica answers it (9 each is right),
outcomes answered 202 and applied, the whole diagnosis' revision, 5xx answers and reads done.
Exits 1 when a run was counted twice, stored short or lost its outcome. The same scenario
with 16 readers is ``tests/store/test_replicas.py``; 48 are too heavy for the test suite on a
small shared machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.postgres import PostgresServer  # noqa: E402
from tests.store.test_replicas import REPLICAS, Replica, Router, heavy_reads  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readers", type=int, default=48)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    postgres = PostgresServer()
    postgres.start()
    replicas: list[Replica] = []
    try:
        url = postgres.create_database("mast_readers")
        folder = Path(tempfile.mkdtemp(prefix="mast-readers-"))
        replicas = [Replica(folder / f"r{i}", url) for i in range(REPLICAS)]
        for replica in replicas:
            replica.start()
        router = Router([r.url for r in replicas])
        try:
            seen = heavy_reads(replicas, router, readers=args.readers, runs_wanted=args.runs)
        finally:
            router.close()
    finally:
        for replica in replicas:
            replica.stop()
        postgres.stop()
    whole = [9] * REPLICAS
    seen["held"] = (seen["counted"] == seen["runs"] and all(counts == whole for counts in seen["span_counts"])
                    and seen["outcomes_applied"] == seen["outcomes_pending"] == seen["runs"])
    print(json.dumps(seen, indent=2))
    return 0 if seen["held"] else 1


if __name__ == "__main__":
    sys.exit(main())
