"""Overhead of the runtime guards per tool call, as a ratio to the same tool call without guards.

Both sides are ``tool_call`` spans inside an ``agent_run`` through the same SDK pipeline (an
exporter that drops everything), in the same process, alternating short batches; the guarded
side runs all four guards in ``enforce`` mode with a step budget, so every tracker is fed. The
arguments cycle over 64 values and each call returns a different result, so no guard refuses
a call and the ratio is the cost of asking and telling the guards.

    .venv/bin/python benchmarks/bench_guards.py [--seconds 0.2] [--write-docs]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402

from bench_instrumentation import DropExporter, compare  # noqa: E402
from docblock import write_doc_block  # noqa: E402
from mast_otel.instrumentation import agent_run, configure, tool_call  # noqa: E402
from mast_otel.instrumentation.guards import GuardConfig  # noqa: E402

DOC = Path(__file__).resolve().parent.parent / "docs" / "guards.md"
ARGS = [{"resource": "pods", "namespace": f"ns-{i}", "selector": "app=api"} for i in range(64)]


def tool_step(counter: Any, kind: str) -> Callable[[], None]:
    def run() -> None:
        i = next(counter)
        with tool_call("kubectl_get", kind=kind, arguments=ARGS[i % 64]) as call:
            call.set_result({"items": i})

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=0.2, help="about the time of one measuring round")
    parser.add_argument("--write-docs", action="store_true", help=f"write the table into {DOC.name}")
    args = parser.parse_args()

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(DropExporter()))
    configure(tracer_provider=provider, capture_content=False)
    rows = []
    for kind in ("read", "write", "verify"):
        with agent_run("bench", max_steps=10**9) as plain, agent_run("bench", max_steps=10**9,
                                                                    guards=GuardConfig.all("enforce")) as guarded:
            counter = itertools.count()
            # each side needs its own current run: switch by entering the run's context per batch
            base, ours = compare(_in(plain, tool_step(counter, kind)), _in(guarded, tool_step(counter, kind)),
                                 args.seconds)
        rows.append((kind, base, ours))
    configure(tracer_provider=None, capture_content=None)
    lines = ["| tool kind | without guards (µs) | with all four guards, enforce (µs) | ratio |", "|---|---:|---:|---:|"]
    for kind, base, ours in rows:
        lines.append(f"| {kind} | {base * 1e6:.1f} | {ours * 1e6:.1f} | {ours / base:.2f} |")
    table = "\n".join(lines)
    print(table)
    if args.write_docs:
        write_doc_block("bench-guards", table + "\n\n`.venv/bin/python benchmarks/bench_guards.py --write-docs`", DOC)
    return 0


def _in(run: Any, step: Callable[[], None]) -> Callable[[], None]:
    """``step`` with ``run`` as the current run (the two runs are nested; each call picks its own)."""
    from opentelemetry import context, trace

    from mast_otel.instrumentation.runs import _RUN_KEY

    ctx = context.set_value(_RUN_KEY, run, trace.set_span_in_context(run.span))

    def call() -> None:
        token = context.attach(ctx)
        try:
            step()
        finally:
            context.detach(token)

    return call


if __name__ == "__main__":
    raise SystemExit(main())
