"""What the memory account costs on the hot path: ingest spans/s of this tree against a baseline
revision, run alternately (baseline, this tree, baseline, ...) so both see the same machine.

First, in one process, the same bodies are decoded and assembled with every span sized (this
tree's estimate) and with the content-only estimate it replaced, alternately, and each estimate
and the decoder's serialized size per span are timed alone: the sizing's own cost as a share
of decode + assemble.
Then each round is one child process per side running ``bench_ingest``'s in-process ingest (decode +
assemble, every span sized) and its OTLP/HTTP figure (acknowledged spans/s, bodies reserved as
they arrive); the best round per side is kept and the ratio printed. The baseline is exported
with ``git archive`` and imported ahead of the installed package.

    .venv/bin/python benchmarks/bench_memory_account.py --baseline main --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# how setup.py maps the repository's folders onto the package
FOLDERS = {"": "src/mast_otel", "instrumentation": "instrumentation", "processors": "processors", "demo": "demo"}


def export_tree(revision: str, into: Path) -> Path:
    """``revision``'s sources laid out as an importable ``mast_otel`` package under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True, capture_output=True).stdout
    source = into / "source"
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(source, filter="data")
    package = into / "site" / "mast_otel"  # src/mast_otel's files, with the subpackages linked in
    package.mkdir(parents=True)
    for entry in (source / FOLDERS[""]).iterdir():
        (package / entry.name).symlink_to(entry)
    for name, folder in FOLDERS.items():
        if name:
            (package / name).symlink_to(source / folder, target_is_directory=True)
    return into / "site"


def measure(traces: int) -> dict:
    """One round on whatever ``mast_otel`` imports here."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_ingest as b
    import mast_otel.processors.service.pipeline.assembler as assembler

    spans = b.agent_traces(traces)
    template = [b.encode_spans(spans[i:i + b.BATCH]).SerializeToString() for i in range(0, len(spans), b.BATCH)]
    with tempfile.TemporaryDirectory() as tmp:
        result = b.in_process(template, Path(tmp), 1, False)
        result.update(b.over_http(template, Path(tmp), 1, grace=3600))
    result["package"] = str(Path(assembler.__file__).resolve().parent)
    return result


def _content_only(span, overhead, wire=None) -> int:
    """The estimate the account replaced: a fixed size plus content fields (for the same-process ratio)."""
    size = overhead if wire is None else overhead + len(wire.raw)
    if span.input_text or span.output_text or span.tool_args or span.tool_result:
        for text in (span.input_text, span.output_text, span.tool_args, span.tool_result):
            if text:
                size += len(text)
    return size


def sizing_cost(traces: int, repeats: int = 7) -> dict:
    """In one process: decoding and assembling the same bodies with every span sized (this
    tree) and with the content-only estimate, alternately, best of ``repeats`` each."""
    import time

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_ingest as b
    from mast_otel.processors.config import AssemblyConfig
    from mast_otel.processors.ingest.decode import decode_protobuf
    from mast_otel.processors.service.pipeline import assembler

    spans = b.agent_traces(traces)
    template = [b.encode_spans(spans[i:i + b.BATCH]).SerializeToString() for i in range(0, len(spans), b.BATCH)]
    config = AssemblyConfig(grace_seconds=3600, max_buffered_bytes=1 << 40, max_traces_in_flight=10**6)
    sized, best = assembler.span_bytes, {"every_string": float("inf"), "content_only": float("inf")}
    count = 0
    for r in range(repeats):
        bodies = b.bodies_with_fresh_ids(template, 500 + r)
        for name, estimate in (("every_string", sized), ("content_only", _content_only)):
            assembler.span_bytes = estimate
            target = assembler.Assembler(config)
            start = time.perf_counter()
            for body in bodies:
                target.add(decode_protobuf(body).spans, 0.0)
            best[name] = min(best[name], time.perf_counter() - start)
            count = sum(len(buf.spans) for buf in target.in_flight.values())
    assembler.span_bytes = sized
    # the estimate alone, on the same decoded spans: short loops, best of many (noise only adds)
    decoded = [span for body in template for span in decode_protobuf(body).spans]
    alone = {"every_string": float("inf"), "content_only": float("inf")}
    for _ in range(5 * repeats):
        for name, estimate in (("every_string", sized), ("content_only", _content_only)):
            start = time.perf_counter()
            for span in decoded:
                estimate(span, 930)
            alone[name] = min(alone[name], time.perf_counter() - start)
    per_span = {k: v / len(decoded) * 1e6 for k, v in alone.items()}
    # what the decoder adds for it: each span's serialized size (``ByteSize`` on the parsed message)
    from mast_otel.processors.ingest.decode import _serialized_attributes_request

    parsed = [sp for body in template for rs in _serialized_attributes_request().FromString(body).resource_spans
              for ss in rs.scope_spans for sp in ss.spans]
    sizing = min(_timed(lambda: [sp.ByteSize() for sp in parsed]) for _ in range(5 * repeats))
    wire_size = sizing / len(parsed) * 1e6 - min(_timed(lambda: [sp for sp in parsed]) for _ in range(5 * repeats)) / len(parsed) * 1e6
    hot_path = min(best.values()) / count * 1e6
    extra = per_span["every_string"] - per_span["content_only"] + wire_size
    return {"spans": count, "decode_assemble_us_per_span": {k: round(v / count * 1e6, 3) for k, v in best.items()},
            "ratio_spans_per_s": round(best["content_only"] / best["every_string"], 3),
            "estimate_us_per_span": {k: round(v, 3) for k, v in per_span.items()},
            "wire_size_us_per_span": round(wire_size, 3),
            "extra_share_of_decode_assemble": round(extra / hot_path, 3)}


def _timed(call) -> float:
    import time

    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--traces", type=int, default=400, help="runs per round (26 spans each)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.traces)))
        return
    same_process = sizing_cost(args.traces)
    with tempfile.TemporaryDirectory() as tmp:
        site = export_tree(args.baseline, Path(tmp))
        sides = {"baseline": {**os.environ, "PYTHONPATH": str(site)}, "this_tree": dict(os.environ)}
        rounds: dict[str, list[dict]] = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, env in sides.items():
                out = subprocess.run([sys.executable, __file__, "--child", "--traces", str(args.traces)], env=env,
                                     check=True, capture_output=True, text=True, cwd=tmp).stdout
                rounds[name].append(json.loads(out.strip().splitlines()[-1]))
    best = {name: {key: max(r[key] for r in runs) for key in ("ingest_spans_per_s", "http_spans_per_s")}
            for name, runs in rounds.items() if runs}
    report = {
        "baseline": args.baseline, "rounds": args.rounds, "traces_per_round": args.traces, "best": best,
        "ratio_ingest": round(best["this_tree"]["ingest_spans_per_s"] / best["baseline"]["ingest_spans_per_s"], 3),
        "ratio_http": round(best["this_tree"]["http_spans_per_s"] / best["baseline"]["http_spans_per_s"], 3),
        "rounds_spans_per_s": {name: [[round(r["ingest_spans_per_s"]), round(r["http_spans_per_s"])] for r in runs]
                               for name, runs in rounds.items()},
        "packages": {name: runs[0]["package"] for name, runs in rounds.items()},
        "same_process": same_process,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
