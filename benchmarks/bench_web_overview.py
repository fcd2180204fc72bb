"""What one view of the web overview costs as the number of stored models grows, as ratios in this process.

    .venv/bin/python benchmarks/bench_web_overview.py [--models N] [--write]

A store holding one run per model for ``--models`` models (default 10,000) against a store
holding 20 models (the default overview page), each run with one mode in a third of them; the
overview is requested in process (FastAPI test client, no network). Figures: bytes of the
page and CPU seconds per view (best of five), and their ratios. ``--write`` puts the table
into docs/web.md.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from docblock import write_doc_block
from fastapi import FastAPI
from fastapi.testclient import TestClient

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.model import Diagnosis, Finding
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from mast_otel.processors.web.routes import build_router

BASELINE_MODELS = 20


def filled_store(path: Path, models: int) -> DiagnosisStore:
    store = DiagnosisStore(path)
    now = time.time()
    store.save_many(
        (Diagnosis(trace_id=f"{i:032x}", findings=[Finding("FM-1.3", 0.9, "looped", ("a" * 16,))] if i % 3 == 0 else [],
                   fatal=False, model=f"model-{i:05d}", outcome="failure" if i % 2 else "success",
                   diagnosed_at=now - i), None)
        for i in range(models))
    return store


def view_cost(store: DiagnosisStore, repeats: int = 5) -> tuple[int, float]:
    """Bytes of the overview and the best CPU seconds of one view."""
    app = FastAPI()
    app.include_router(build_router(store, None, ProcessorConfig(web={"overview_window": 1_000_000})))
    client = TestClient(app)
    size = len(client.get("/").content)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        client.get("/")
        times.append(time.process_time() - start)
    return size, min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=10_000)
    parser.add_argument("--write", action="store_true", help="write the table into docs/web.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        base = view_cost(filled_store(Path(folder) / "base.sqlite", BASELINE_MODELS))
        many = view_cost(filled_store(Path(folder) / "many.sqlite", args.models))
    table = "\n".join([
        "| stored models | page bytes | CPU ms per view |",
        "|---|---|---|",
        f"| {BASELINE_MODELS} | {base[0]:,} | {base[1] * 1000:.1f} |",
        f"| {args.models:,} | {many[0]:,} | {many[1] * 1000:.1f} |",
        f"| ratio | {many[0] / base[0]:.2f}x | {many[1] / base[1]:.1f}x |",
    ])
    print(table)
    if args.write:
        write_doc_block("web-overview", table, Path(__file__).parent.parent / "docs" / "web.md")


if __name__ == "__main__":
    main()
