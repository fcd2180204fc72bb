"""What rule detection costs: microseconds per run and per span, for ``diagnose`` and live
``LiveDetection.observe``, as a ratio to just iterating each run's spans and reading the
fields detectors read (the floor any detector pays). The service's own path, live detection and
then the final ``diagnose``, is timed twice: replaying every step, and reusing the live trackers'
work (``diagnose(run, config, live)``); the two rows compare what the reuse saves.

    .venv/bin/python benchmarks/bench_detection_cost.py [--runs N] [--steps N] [--no-write]

Three workloads: synthetic OTel-shaped SRE runs (agent span with hints, model calls with
message counts and requested tools, tool calls with hashes, some repetition), the framework
corpus (runs real frameworks' instrumentation recorded, no hints: what deriving them costs),
and the MAST-Data AG2 step lists (content-bearing). Best of three timings each, same process.
Results go to docs/detection.md between the ``bench_detection_cost`` markers.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import time

from bench_accuracy import DOC, ROOT
from docblock import write_doc_block

from mast_otel.wire.hashing import stable_hash
from mast_otel.processors.config import DetectionConfig
from mast_otel.processors.detectors import LiveDetection, diagnose
from mast_otel.processors.detectors.content_signals import OPT_IN
from mast_otel.processors.detectors import rule_findings
from mast_otel.processors.ingest.transcripts import runs_from_steplist
from mast_otel.processors.model import Role, Run, RunHints, Span

CONTENT_ON = DetectionConfig(content=OPT_IN)
FIELDS = ("role", "tool_name", "tool_kind", "args_hash", "result_hash", "error", "verification_passed",
          "input_message_count", "requested_tools", "output_text", "parent_span_id", "start_ns")

AG2_RECORDS = ROOT.parent / "shared" / "eval" / "mast-ag2" / "records.json"  # real step lists (their labels are not used)


def synthetic_run(n: int, steps: int, rng: random.Random) -> Run:
    trace = f"{n:032x}"
    root = Span(trace, f"{1:016x}", None, "invoke_agent sre", 0, 0, role=Role.AGENT, agent_name="sre",
                hints=RunHints(max_steps=steps, allowed_tools=("get_pods", "get_logs", "restart", "probe"),
                               constraints=("read_only",) if n % 3 == 0 else (), claimed_success=True))
    spans = [root]
    tools = ("get_pods", "get_logs", "restart", "probe")
    for i in range(steps):
        t = (i + 1) * 1000
        sid = f"{i + 2:016x}"
        if i % 2 == 0:
            spans.append(Span(trace, sid, root.span_id, "chat m", t, t + 900, role=Role.LLM, model="m",
                              input_message_count=2 + i, requested_tools=(tools[(i // 2) % 4],), step_index=i))
        else:
            name = tools[(i // 2) % 4]
            spans.append(Span(trace, sid, root.span_id, f"execute_tool {name}", t, t + 900, role=Role.TOOL,
                              tool_name=name, tool_kind="verify" if name == "probe" else "read",
                              args_hash=stable_hash(rng.randrange(3)), result_hash=stable_hash(rng.randrange(2)),
                              verification_passed=True if name == "probe" else None, step_index=i))
    root.end_ns = steps * 1000 + 2000
    return Run.from_spans(trace, spans, completion="root_ended")


def read_fields(run: Run) -> int:
    n = 0
    for span in run.spans:
        for name in FIELDS:
            if getattr(span, name) is not None:
                n += 1
    return n


def live(run: Run, config: DetectionConfig | None = None) -> LiveDetection:
    detection = LiveDetection(config)
    for s in sorted(run.spans, key=lambda s: s.end_ns):
        detection.observe(s)
    return detection


DEFAULTS = DetectionConfig()


def live_then_replay(run: Run) -> list:
    """What the service does without reusing live work: live trackers, then a full replay."""
    live(run, DEFAULTS)
    return diagnose(run, DEFAULTS)


def live_then_reuse(run: Run) -> list:
    """What the service does: live trackers, then a diagnosis that reuses their work where it can."""
    return diagnose(run, DEFAULTS, live(run, DEFAULTS))


def best_of(fn, runs: list[Run], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for run in runs:
            fn(run)
        best = min(best, time.perf_counter() - start)
    return best


def measure(label: str, runs: list[Run], derived: bool = False) -> list[str]:
    """Rows for ``runs``; ``derived``: add deriving hints first (``rule_findings``), timed on fresh
    copies, since deriving fills the runs in place and a second pass would find nothing to do."""
    spans = sum(len(r.spans) for r in runs)
    base = best_of(read_fields, runs)
    rows = []
    steps = [("iterate + read fields (baseline)", read_fields), ("diagnose", diagnose),
             ("diagnose, content signals on", lambda run: diagnose(run, CONTENT_ON)), ("LiveDetection.observe", live),
             ("live, then diagnose replaying every step", live_then_replay),
             ("live, then diagnose reusing the live trackers", live_then_reuse)]
    for name, fn in steps:
        t = base if fn is read_fields else best_of(fn, runs)
        rows.append(f"| {label} | {name} | {t / len(runs) * 1e6:.1f} | {t / spans * 1e6:.2f} | {t / base:.1f}x |")
    if derived:
        t = min(_timed(rule_findings, copy.deepcopy(runs)) for _ in range(3))
        rows.append(f"| {label} | derive hints + diagnose + qualify | {t / len(runs) * 1e6:.1f} | {t / spans * 1e6:.2f} | {t / base:.1f}x |")
    return rows


def _timed(fn, runs: list[Run]) -> float:
    start = time.perf_counter()
    for run in runs:
        fn(run)
    return time.perf_counter() - start


def corpus_runs() -> list[Run]:
    """The framework corpus recorded with content (tests/frameworks/corpus), one run per file."""
    from pathlib import Path

    from mast_otel.processors.ingest.files import load_runs

    corpus = Path(__file__).resolve().parents[1] / "tests" / "frameworks" / "corpus"
    paths = [p for p in sorted(corpus.glob("*/*.json")) if p.name != "manifest.json"]
    return [r for r in load_runs(paths) if r.steps]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    rng = random.Random(7)
    synthetic = [synthetic_run(n, args.steps, rng) for n in range(args.runs)]
    rows = measure(f"synthetic SRE, {args.steps} steps", synthetic)
    corpus = corpus_runs()
    if corpus:
        rows += measure(f"framework corpus, {len(corpus)} runs", corpus, derived=True)
    if AG2_RECORDS.exists():
        ag2 = runs_from_steplist(json.loads(AG2_RECORDS.read_text()))
        rows += measure(f"AG2 step lists, {sum(len(r.spans) for r in ag2) / len(ag2):.1f} spans avg", ag2)
    body = "\n".join(["| workload | what | µs per run | µs per span | vs baseline |", "|---|---|---|---|---|", *rows])
    print(body)
    if not args.no_write:
        write_doc_block("bench_detection_cost", body, DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main())
