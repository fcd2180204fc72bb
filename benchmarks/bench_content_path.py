"""The content-on corpus through the service's pipeline in one process, without HTTP: CPU seconds
per round for ingest (decode, normalize, assembly, live detection) and for finishing the runs
(hints, rules, the diagnosis, the store), against the decode floor; the part of ingest spent in
assembly and live detection (``Assembler.add``, timed by a wrapper), alone and with finishing; with
``--baseline`` another build's, alternately.

    .venv/bin/python benchmarks/bench_content_path.py [--traces 600] [--rounds 3] [--pairs 3] \\
        [--baseline OTHER/.venv/bin/python] [--profile]

Workload: ``bench_end_to_end.py --corpus``'s requests (the recordings of tests/frameworks/corpus and
tests/teams/corpus, message content on, repeated to ``--traces`` runs), each round on fresh trace
ids: every request decoded with the service's options and handed to ``IngestStage.ingest``, then
``sweep()`` finishes every run (grace 0). The floor is bench_decode's protobuf decode-and-walk of
the same requests, timed next to each round. CPU time of this process (``time.process_time``).

``--baseline PYTHON`` runs the same rounds with another build's interpreter (its package; this
checkout's corpus and this script), alternating pair by pair (the baseline first in odd pairs),
and prints each figure's median over rounds and the median of the per-pair ratios. The first
round of each process is left out (imports, the decoder's attribute memory filling up).
``--profile`` prints cProfile's largest self times of this build instead.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alternating import alternate, median_of, pair_ratios  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPORA = [ROOT / "tests" / "frameworks" / "corpus", ROOT / "tests" / "teams" / "corpus"]


def rounds_here(traces: int, rounds: int, profile: bool) -> list[dict[str, float]]:
    """This interpreter's build: ``rounds`` rounds, each's CPU seconds (the first included)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_decode import floor
    from bench_end_to_end import corpus_requests
    from bench_ingest import bodies_with_fresh_ids, config_for

    from mast_otel.processors.ingest.decode import decode_protobuf
    from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
    from mast_otel.processors.service.store.diagnoses import DiagnosisStore
    from mast_otel.processors.service.telemetry.metrics import Metrics

    template, spans, runs = corpus_requests(CORPORA, traces)
    profiler = None
    if profile:
        import cProfile
        profiler = cProfile.Profile()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            bodies = bodies_with_fresh_ids(template, 7000 + r)
            config = config_for(Path(tmp), grace_seconds=0)
            stage = IngestStage(config, Metrics(config.metrics), DiagnosisStore(config.store.path))
            options = stage.decode_options
            assembly = _time_assembly(stage)
            gc.collect()
            started = time.process_time()
            for body in template:
                floor(body)
            floor_s = time.process_time() - started
            if profiler is not None:
                profiler.enable()
            started = time.process_time()
            for body in bodies:
                stage.ingest(decode_protobuf(body, options), "http")
            ingested = time.process_time()
            finished = stage.sweep()
            done = time.process_time()
            if profiler is not None:
                profiler.disable()
            stage.store.close()
            assert finished == runs, (finished, runs)
            out.append({"floor": floor_s, "ingest": ingested - started, "finish": done - ingested,
                        "total": done - started, "spans": spans, "assembly": assembly[0],
                        "assembly+finish": assembly[0] + done - ingested})
    if profiler is not None:
        import pstats
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
    return out


def _time_assembly(stage: object) -> list[float]:
    """CPU seconds spent in the stage's ``Assembler.add`` (assembly and live detection), summed
    into the one-element list returned, by a wrapper around that one instance's method."""
    assembler = stage._assembler  # type: ignore[attr-defined]
    add = assembler.add
    spent = [0.0]
    clock = time.process_time

    def timed(*args: object, **kwargs: object) -> object:
        started = clock()
        try:
            return add(*args, **kwargs)
        finally:
            spent[0] += clock() - started

    assembler.add = timed
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3, help="rounds per process (the first left out)")
    parser.add_argument("--pairs", type=int, default=3, help="processes per build, alternating")
    parser.add_argument("--baseline", help="another build's python, e.g. OTHER/.venv/bin/python")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child or args.profile:
        figures = rounds_here(args.traces, args.rounds, args.profile)
        if args.child:
            print(json.dumps(figures))
        return
    builds = {"this": sys.executable, **({"baseline": args.baseline} if args.baseline else {})}
    kept = alternate(builds, args.pairs, __file__, ["--traces", str(args.traces), "--rounds", str(args.rounds)])
    spans = kept["this"][0][0]["spans"]
    print(f"{spans:.0f} spans a round, {args.pairs} processes per build, {args.rounds - 1} rounds each counted")
    for what in ("ingest", "assembly", "finish", "assembly+finish", "total"):
        line = []
        for name in builds:
            to_floor = [r["floor"] / r["total"] for proc in kept[name] for r in proc] if what == "total" else []
            line.append(f"{name} {median_of(kept[name], what):.3f} s" +
                        (f" (ratio to the floor {statistics.median(to_floor):.3f})" if to_floor else ""))
        if "baseline" in builds:
            line.append(pair_ratios(kept, what))
        print(f"{what}: " + "; ".join(line))

if __name__ == "__main__":
    main()
