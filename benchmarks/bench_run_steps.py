"""What keeping run step lists and checking step budgets live costs, as ratios in this process.

    .venv/bin/python benchmarks/bench_run_steps.py [--runs N] [--steps N]

- store: ``DiagnosisStore.save_many`` of batches of 50 diagnoses (as the sweeper writes them),
  with each run's compact step list (built from the run, serialized, written) against without
  it, on a temporary SQLite file; and the same difference against the whole completion of a
  run (rule diagnosis + save), for scale;
- live: ``LiveDetection.observe`` per span in end order, with every step carrying its run's
  budget and agent name (``BudgetTracker`` active) against the same steps without them.

Workload: bench_detection_cost's synthetic SRE runs. Best of five timings each.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import tempfile
import time
from pathlib import Path

from bench_detection_cost import synthetic_run

from mast_otel.processors.detectors import LiveDetection, diagnose
from mast_otel.processors.model import Role, Run
from mast_otel.processors.attribution import build_diagnosis
from mast_otel.processors.service.store.run_steps import step_rows, steps_json
from mast_otel.processors.service.store.diagnoses import DiagnosisStore

BATCH = 50


def best(fn, repeats: int = 5, clock=time.perf_counter) -> float:
    """The fastest of ``repeats`` calls of ``fn``, in seconds of ``clock``."""
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return min(times)


def with_budget(run: Run) -> Run:
    budget = run.hints.max_steps
    spans = [s if s.role is Role.AGENT else dataclasses.replace(s, step_budget=budget, agent_name="sre") for s in run.spans]
    return Run.from_spans(run.trace_id, spans, completion=run.completion)


def store_cost(runs: list[Run], folder: Path) -> tuple[float, float, float]:
    """Seconds per run: saving its diagnosis without and with its step list, and diagnosing it."""
    diagnoses = [build_diagnosis(r, diagnose(r)) for r in runs]
    stores = {flag: DiagnosisStore(folder / f"{flag}.sqlite") for flag in (False, True)}

    def save(flag: bool) -> None:
        store = stores[flag]
        for i in range(0, len(runs), BATCH):
            batch = runs[i:i + BATCH]
            steps = {r.trace_id: steps_json(step_rows(r)) for r in batch} if flag else None
            store.save_many([(d, None) for d in diagnoses[i:i + BATCH]], steps)

    plain = best(lambda: save(False))
    listed = best(lambda: save(True))
    rules = best(lambda: [build_diagnosis(r, diagnose(r)) for r in runs])
    for store in stores.values():
        store.close()
    return plain / len(runs), listed / len(runs), rules / len(runs)


def in_end_order(runs: list[Run]) -> tuple[int, list[list]]:
    """Span count, and each run's spans in the order they end (the order they arrive)."""
    ordered = [sorted(r.spans, key=lambda s: s.end_ns) for r in runs]
    return sum(len(spans) for spans in ordered), ordered


def observe_all(ordered) -> None:
    for spans in ordered:
        live = LiveDetection()
        for span in spans:
            live.observe(span)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--steps", type=int, default=25)
    args = parser.parse_args()
    rng = random.Random(7)
    runs = [synthetic_run(n, args.steps, rng) for n in range(args.runs)]
    budgeted = [with_budget(r) for r in runs]

    with tempfile.TemporaryDirectory() as tmp:
        plain, listed, rules = store_cost(runs, Path(tmp))
    print(f"store, {args.steps + 1} spans/run: {plain * 1e6:.0f} µs/diagnosis without step lists, "
          f"{listed * 1e6:.0f} µs with ({listed / plain:.2f}x); completion (rules + save) "
          f"{(rules + plain) * 1e6:.0f} -> {(rules + listed) * 1e6:.0f} µs ({(rules + listed) / (rules + plain):.2f}x)")

    count, without = in_end_order(runs)
    _, carried = in_end_order(budgeted)
    t_without = best(lambda: observe_all(without))
    t_with = best(lambda: observe_all(carried))
    print(f"live, per span: {t_without / count * 1e6:.2f} µs without budgets on steps, "
          f"{t_with / count * 1e6:.2f} µs with ({t_with / t_without:.2f}x)")


if __name__ == "__main__":
    main()
