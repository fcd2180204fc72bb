"""What a very long run costs its page, its stored step list and ingest meanwhile, as ratios in this process.

    .venv/bin/python benchmarks/bench_run_page.py [--spans N] [--name-chars N] [--write]

Two runs are stored the way the store exporter stores them (diagnosis plus step list) before a
real ``mast-otel serve`` starts on that store: a long one (``--spans``, default 5,000: the
default ``assembly.max_spans_per_trace``), its model calls each asking for 40 tools and its
tool spans named with ``--name-chars`` characters (the decoder keeps span names up to 1,024),
and a 50-span one as the baseline. Figures:

- the stored step list's bytes;
- the run page: bytes, and seconds to answer (best of three, nothing else running);
- ingest while one client reloads a run's page a second after each answer: the median latency
  of single-run OTLP/HTTP requests (and, for scale, the same with no page requested).

``--write`` puts the table into docs/web.md.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
from bench_detection_cost import synthetic_run
from docblock import write_doc_block
from soak import RunFactory, ServeProcess

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.detectors import diagnose
from mast_otel.processors.model import Role, Run
from mast_otel.processors.attribution import build_diagnosis
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.store.accounting import Accounting
from mast_otel.processors.service.outputs.base import Batch, Counts, DiagnosedRun
from mast_otel.processors.service.server import build_exporters
from mast_otel.processors.service.store.diagnoses import DiagnosisStore

BASELINE_SPANS = 50
INGEST_REQUESTS = 60
PROTOBUF = {"Content-Type": "application/x-protobuf"}


def long_run(n: int, spans: int, name_chars: int) -> Run:
    """``synthetic_run`` with long tool names and model calls that ask for many tools."""
    run = synthetic_run(n, spans - 1, random.Random(n))
    asked = tuple(f"tool_{i:02d}_" + "x" * 52 for i in range(40))
    for span in run.spans:
        if span.role is Role.LLM:
            span.requested_tools = asked
        elif span.role is Role.TOOL:
            span.name = (span.name + "_" * name_chars)[:name_chars]
            span.tool_name = span.name
    return run


def store_runs(path: Path, runs: list[Run]) -> dict[str, int]:
    """Store each run through the store exporter ``serve`` builds (default config); step-list bytes by trace id."""
    config = ProcessorConfig(store={"path": str(path)})
    store = DiagnosisStore(path)
    try:
        exporter = next(e for e in build_exporters(config, Metrics(config.metrics), store) if e.name == "store")
        exporter.export(Batch([DiagnosedRun("diagnosis", build_diagnosis(run, diagnose(run)), None, Counts(), Accounting(), run=run)
                               for run in runs]))
    finally:
        store.close()
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT trace_id, length(CAST(steps AS BLOB)) FROM run_steps").fetchall())


def page(url: str, repeats: int = 3) -> tuple[int, float]:
    """Bytes of a page and the best seconds to get it."""
    times, size = [], 0
    with httpx.Client(timeout=120) as client:
        for _ in range(repeats):
            start = time.perf_counter()
            response = client.get(url)
            times.append(time.perf_counter() - start)
            assert response.status_code == 200, response.status_code
            size = len(response.content)
    return size, min(times)


def ingest_p50(url: str, factory: RunFactory) -> float:
    """Median seconds of single-run OTLP/HTTP requests, one after another."""
    latencies = []
    with httpx.Client(timeout=60) as client:
        for _ in range(INGEST_REQUESTS):
            body = factory.run()[0]
            start = time.perf_counter()
            assert client.post(f"{url}/v1/traces", content=body, headers=PROTOBUF).status_code == 200
            latencies.append(time.perf_counter() - start)
    return statistics.median(latencies)


def while_loading(url: str, action):
    """``action()`` while one client requests ``url`` a second after each answer (someone
    reloading the page)."""
    stop = threading.Event()

    def load() -> None:
        with httpx.Client(timeout=120) as client:
            while not stop.is_set():
                client.get(url)
                stop.wait(1.0)

    loader = threading.Thread(target=load, daemon=True)
    loader.start()
    time.sleep(0.5)  # the first render is under way
    try:
        return action()
    finally:
        stop.set()
        loader.join(120)


def measure(spans: int, name_chars: int) -> dict[str, float]:
    runs = [long_run(1, spans, name_chars), long_run(2, BASELINE_SPANS, name_chars)]
    with tempfile.TemporaryDirectory() as folder:
        sizes = store_runs(Path(folder) / "store.sqlite", runs)
        with ServeProcess(Path(folder)) as serve:
            factory = RunFactory(8)
            long_url, short_url = (f"{serve.url}/runs/{r.trace_id}" for r in runs)
            long_page, short_page = page(long_url), page(short_url)
            ingest_p50(serve.url, factory)  # warm up
            idle = ingest_p50(serve.url, factory)
            loaded = while_loading(long_url, lambda: ingest_p50(serve.url, factory))
            loaded_short = while_loading(short_url, lambda: ingest_p50(serve.url, factory))
    return {
        "long_steps_bytes": sizes[runs[0].trace_id], "short_steps_bytes": sizes[runs[1].trace_id],
        "long_page_bytes": long_page[0], "short_page_bytes": short_page[0],
        "long_page_s": long_page[1], "short_page_s": short_page[1],
        "ingest_idle_ms": idle * 1000, "ingest_loaded_ms": loaded * 1000, "ingest_loaded_short_ms": loaded_short * 1000,
    }


def table(spans: int, m: dict[str, float]) -> str:
    return "\n".join([
        f"| figure | {BASELINE_SPANS}-span run | {spans:,}-span run | ratio |",
        "|---|---|---|---|",
        f"| stored step list, bytes | {m['short_steps_bytes']:,} | {m['long_steps_bytes']:,} | "
        f"{m['long_steps_bytes'] / m['short_steps_bytes']:.1f}x |",
        f"| run page, bytes | {m['short_page_bytes']:,} | {m['long_page_bytes']:,} | "
        f"{m['long_page_bytes'] / m['short_page_bytes']:.1f}x |",
        f"| run page, seconds to answer | {m['short_page_s']:.3f} | {m['long_page_s']:.3f} | "
        f"{m['long_page_s'] / m['short_page_s']:.1f}x |",
        f"| ingest p50 ms while the run's page is reloaded every second (no page: {m['ingest_idle_ms']:.1f}) | "
        f"{m['ingest_loaded_short_ms']:.1f} | {m['ingest_loaded_ms']:.1f} | {m['ingest_loaded_ms'] / m['ingest_loaded_short_ms']:.1f}x |",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=5000)
    parser.add_argument("--name-chars", type=int, default=1000)
    parser.add_argument("--write", action="store_true", help="write the table into docs/web.md")
    args = parser.parse_args()
    text = table(args.spans, measure(args.spans, args.name_chars))
    print(text)
    if args.write:
        write_doc_block("run-page", text, Path(__file__).parent.parent / "docs" / "web.md")


if __name__ == "__main__":
    main()
