"""What finishing a recorded run costs, per span: live detection fed in end order, then hint
derivation, rule detection and building the diagnosis, on the runs real frameworks' own
instrumentation recorded (tests/frameworks/corpus and tests/teams/corpus, content captured).

    .venv/bin/python benchmarks/bench_corpus_finish.py

Best of three passes, in process, microseconds per span. To compare builds, run this file with
another checkout's interpreter (``OTHER/.venv/bin/python benchmarks/bench_corpus_finish.py``):
the package comes from that interpreter, the corpus from this checkout.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mast_otel.processors.detectors import LiveDetection  # noqa: E402
from mast_otel.processors.detectors import rule_findings  # noqa: E402
from mast_otel.processors.ingest.files import load_runs  # noqa: E402
from mast_otel.processors.attribution import build_diagnosis  # noqa: E402

CORPORA = (ROOT / "tests" / "frameworks" / "corpus", ROOT / "tests" / "teams" / "corpus")


def main() -> None:
    files = [str(p) for corpus in CORPORA for p in sorted(corpus.glob("*/*.json")) if p.name != "manifest.json"]
    best: dict[str, float] = {}
    for _ in range(3):
        runs = [r for r in load_runs(files) if r.steps]  # fresh: derivation changes runs in place
        spans = sum(len(r.spans) for r in runs)
        started = time.perf_counter()
        for run in runs:
            live = LiveDetection()
            for span in sorted(run.spans, key=lambda s: s.end_ns):  # as exporters send them
                live.observe(span)
        live_done = time.perf_counter()
        for run in runs:
            build_diagnosis(run, rule_findings(run))
        finished = time.perf_counter()
        for key, seconds in (("live", live_done - started), ("finish", finished - live_done)):
            best[key] = min(best.get(key, float("inf")), seconds / spans * 1e6)
    print(f"{len(runs)} runs, {spans} spans: live detection {best['live']:.2f} µs per span, "
          f"derive + diagnose + build the diagnosis {best['finish']:.2f} µs per span")


if __name__ == "__main__":
    main()
