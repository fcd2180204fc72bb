"""Normalize alone on the content-on corpus: CPU seconds per round for turning decoded spans into
the canonical vocabulary (``normalize_into``), decoding left out; with ``--baseline`` another
build's, alternately.

    .venv/bin/python benchmarks/bench_normalize.py [--traces 600] [--rounds 4] [--pairs 3] \\
        [--baseline OTHER/.venv/bin/python] [--plain] [--profile] [--digest]

Workload: bench_content_path's requests (the recordings of tests/frameworks/corpus and
tests/teams/corpus, message content on, repeated to ``--traces`` runs). Each request is decoded
once, outside the timer, with the service's options; every call the decoder made to
``normalize_into`` is kept (the span as it stood before, the name, attributes and events). A round
then makes those calls again on fresh copies of the spans, request by request, each request inside
the content memo as the decoder holds it (``--plain``: without it, as ``DecodeOptions(fast=False)``).
CPU time of this process (``time.process_time``); the first round of each process is left out.

``--baseline PYTHON`` runs the same rounds with another build's interpreter (its package; this
checkout's corpus and this script), alternating process by process, and prints the median of each
build's rounds and the median of the per-pair ratios. ``--profile`` prints cProfile's largest
cumulative times of this build instead; ``--digest`` prints a digest of every normalized span's
fields (fast and plain), to compare builds' results.
"""

from __future__ import annotations

import argparse
import copy
import gc
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any
sys.path.insert(0, str(Path(__file__).resolve().parent))
from alternating import alternate, median_of, pair_ratios  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPORA = [ROOT / "tests" / "frameworks" / "corpus", ROOT / "tests" / "teams" / "corpus"]


def recorded_calls(traces: int) -> list[list[tuple[Any, ...]]]:
    """Per request, the decoder's ``normalize_into`` calls: (span before, name, attrs, chars, events)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_end_to_end import corpus_requests

    from mast_otel.processors.ingest import decode
    from mast_otel.processors.ingest.decode import DecodeOptions, decode_protobuf

    template, _, _ = corpus_requests(CORPORA, traces)
    original = decode.normalize_into
    requests: list[list[tuple[Any, ...]]] = []

    def record(span: Any, name: str, attrs: Any, content_chars: int = 8192, events: Any = (), *rest: Any) -> bool:
        requests[-1].append((copy.copy(span), name, attrs, content_chars, events, *rest))
        return original(span, name, attrs, content_chars, events, *rest)

    decode.normalize_into = record
    try:
        for body in template:
            requests.append([])
            decode_protobuf(body, DecodeOptions())
    finally:
        decode.normalize_into = original
    return requests


def fresh_calls(requests: list[list[tuple[Any, ...]]]) -> list[list[tuple[Any, ...]]]:
    """The calls on copies of the spans as they stood before (normalize writes into its span)."""
    return [[(copy.copy(c[0]), *c[1:]) for c in calls] for calls in requests]


def run(fresh: list[list[tuple[Any, ...]]], memo: bool) -> float:
    """CPU seconds for every call, request by request, inside the content memo when ``memo``."""
    from mast_otel.processors.ingest.normalize import normalize_into
    from mast_otel.processors.tools.content_memo import remembering

    gc.collect()
    started = time.process_time()
    for calls in fresh:
        with remembering(memo):
            for span, name, attrs, chars, events, *rest in calls:
                normalize_into(span, name, attrs, chars, events, *rest)
    return time.process_time() - started


def rounds_here(traces: int, rounds: int, memo: bool, profile: bool) -> list[dict[str, float]]:
    requests = recorded_calls(traces)
    spans = sum(len(calls) for calls in requests)
    profiler = None
    if profile:
        import cProfile
        profiler = cProfile.Profile()
    out = []
    for _ in range(rounds):
        fresh = fresh_calls(requests)
        if profiler is not None:
            profiler.enable()
        seconds = run(fresh, memo)
        if profiler is not None:
            profiler.disable()
        out.append({"normalize": seconds, "spans": spans})
    if profiler is not None:
        import pstats
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
    return out


def digest(traces: int) -> str:
    """A digest of every normalized span's fields, fast and plain (they must agree with each other)."""
    import dataclasses

    requests = recorded_calls(traces)
    found = []
    for memo in (True, False):
        fresh = fresh_calls(requests)
        run(fresh, memo)
        spans = [span for calls in fresh for span, *_ in calls]
        found.append(hashlib.sha256(repr([dataclasses.astuple(s) for s in spans]).encode()).hexdigest()[:16])
    return f"fast {found[0]} plain {found[1]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=4, help="rounds per process (the first left out)")
    parser.add_argument("--pairs", type=int, default=3, help="processes per build, alternating")
    parser.add_argument("--baseline", help="another build's python, e.g. OTHER/.venv/bin/python")
    parser.add_argument("--plain", action="store_true", help="without the content memo (the plain path)")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--digest", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.digest:
        print(digest(args.traces))
        return
    if args.child or args.profile:
        figures = rounds_here(args.traces, args.rounds, not args.plain, args.profile)
        if args.child:
            print(json.dumps(figures))
        return
    builds = {"this": sys.executable, **({"baseline": args.baseline} if args.baseline else {})}
    kept = alternate(builds, args.pairs, __file__,
                     ["--traces", str(args.traces), "--rounds", str(args.rounds), *(["--plain"] if args.plain else [])])
    spans = kept["this"][0][0]["spans"]
    line = []
    for name in builds:
        seconds = median_of(kept[name], "normalize")
        line.append(f"{name} {seconds:.3f} s ({seconds / spans * 1e6:.2f} µs a span)")
    if "baseline" in builds:
        line.append(pair_ratios(kept, "normalize"))
    print(f"{spans:.0f} spans a round, {args.pairs} processes per build, {args.rounds - 1} rounds each counted"
          f"{' (plain path)' if args.plain else ''}")
    print("normalize: " + "; ".join(line))

if __name__ == "__main__":
    main()
