"""Two builds of the server side by side: spans per server CPU-second, end to end, alternating.

    .venv/bin/python benchmarks/compare_builds.py \\
        --a "/path/to/base/.venv/bin/mast-otel serve" --b "/path/to/new/.venv/bin/mast-otel serve" \\
        [--rounds 5] [--traces 600] [--workloads corpus with-id without-id] [--json]

Each build is a server command (a checkout with its own venv), started fresh for every figure
with the default configuration, as ``bench_end_to_end.py`` does; this process is the client and
the figure is the server's CPU seconds from the first request until everything it does for the
workload is done (every run stored, every turn in its session's diagnosis).

The workloads (``--workloads``, all three by default):

- ``corpus``: the framework and team corpora's recordings with message content on
  (``--corpus``; default ``tests/frameworks/corpus tests/teams/corpus``), repeated to ``--traces`` runs;
- ``with-id``: bench_decode's synthetic runs (26 spans each), each carrying a
  ``gen_ai.conversation.id`` (``--turns-per-session`` runs per session, default 1: every run a
  session of its own, as when the application gives each conversation its id);
- ``without-id``: the same runs with no conversation id.

Per round, for each workload: the decode floor (bench_decode's protobuf decode-and-walk, in this
process, on that workload's requests), then build A and build B (B first on odd rounds), each on
fresh trace ids. Because the machine's load changes from round to round, every ratio is taken
within a round, then the median over rounds is reported:

- per build and workload: spans per server CPU-second (median) and its ratio to the floor;
- B / A per workload;
- per build: ``with-id`` / ``without-id``, what sessions cost when every run carries an id (1.0: nothing).

The table is printed in Markdown, to paste in a closing note; ``--json`` prints every round's figures.
Not measured: the client's CPU, memory, latency, PostgreSQL (``bench_end_to_end.py --postgres``),
and anything done ``sessions.quiet_seconds`` after the workload (sessions completing).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import BATCH, agent_traces  # noqa: E402  (the same workload)
from bench_end_to_end import corpus_requests, end_to_end, session_turns, with_sessions_of  # noqa: E402
from bench_ingest import SPANS_PER_RUN, bodies_with_fresh_ids, floor_rate  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = {
    "corpus": "framework + team corpora, content on (`--corpus`)",
    "with-id": "synthetic runs, each with a conversation id",
    "without-id": "synthetic runs without a conversation id",
}


class Workload:
    """One workload's requests and what the server must finish for them."""

    def __init__(self, name: str, template: list[bytes], spans: int, runs: int) -> None:
        self.name = name
        self.template = template
        self.spans = spans
        self.runs = runs
        self.turns = session_turns(template)


def workloads(names: list[str], traces: int, corpus: list[Path], turns_per_session: int) -> list[Workload]:
    out = []
    synthetic: list[bytes] | None = None
    for name in names:
        if name == "corpus":
            template, spans, runs = corpus_requests(corpus, traces)
            out.append(Workload(name, template, spans, runs))
            continue
        if synthetic is None:
            generated = agent_traces(traces)
            synthetic = [encode_spans(generated[i:i + BATCH]).SerializeToString() for i in range(0, len(generated), BATCH)]
        template = with_sessions_of(synthetic, turns_per_session if name == "with-id" else 0)
        out.append(Workload(name, template, traces * SPANS_PER_RUN, traces))
    return out


def measure(commands: dict[str, list[str]], loads: list[Workload], rounds: int) -> list[dict[str, dict[str, float]]]:
    """Every round's figures: workload -> {"floor", "A", "B"} in spans per CPU-second."""
    out = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for r in range(rounds):
            figures: dict[str, dict[str, float]] = {}
            for w, load in enumerate(loads):
                row = {"floor": floor_rate(load.template, 5, time.process_time)}
                for b, build in enumerate(("A", "B") if r % 2 == 0 else ("B", "A")):
                    bodies = bodies_with_fresh_ids(load.template, 7000 + 100 * r + 10 * w + b)
                    cpu, _, _ = end_to_end(commands[build], tmp, bodies, load.runs, None, turns=load.turns)
                    row[build] = load.spans / cpu
                figures[load.name] = row
                print(f"round {r + 1}/{rounds} {load.name}: " + ", ".join(f"{k} {v:,.0f}" for k, v in row.items()),
                      file=sys.stderr)
            out.append(figures)
    return out


def median_ratio(rounds: list[dict[str, dict[str, float]]], top: tuple[str, str], bottom: tuple[str, str]) -> float:
    """The median over rounds of one figure (workload, column) over another of the same round
    (``bottom`` ("", "") for the figure itself)."""
    return statistics.median(f[top[0]][top[1]] / (f[bottom[0]][bottom[1]] if bottom[0] else 1.0) for f in rounds)


def table(rounds: list[dict[str, dict[str, float]]], names: list[str], labels: dict[str, str]) -> str:
    """The Markdown table: per workload, each build's median spans per CPU-second (its ratio to
    the floor), and B / A; then what an id on every run costs each build."""
    lines = [f"| workload | {labels['A']} | {labels['B']} | B / A |", "|---|---|---|---|"]
    alone = ("", "")
    for name in names:
        cells = [f"{median_ratio(rounds, (name, build), alone):,.0f} ({median_ratio(rounds, (name, build), (name, 'floor')):.3f})"
                 for build in ("A", "B")]
        lines.append(f"| {WORKLOADS[name]} | {cells[0]} | {cells[1]} | {median_ratio(rounds, (name, 'B'), (name, 'A')):.3f} |")
    if "with-id" in names and "without-id" in names:
        cost = [median_ratio(rounds, ("with-id", build), ("without-id", build)) for build in ("A", "B")]
        lines.append(f"| with an id / without (sessions' cost) | {cost[0]:.3f} | {cost[1]:.3f} | |")
    floors = ", ".join(f"{name} {median_ratio(rounds, (name, 'floor'), alone):,.0f}" for name in names)
    lines.append("")
    lines.append(f"Median of {len(rounds)} alternating rounds; in brackets the ratio to the decode floor measured in "
                 f"the same round (floors, spans per CPU-second: {floors}).")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="build A's server command, e.g. 'BASE/.venv/bin/mast-otel serve'")
    parser.add_argument("--b", required=True, help="build B's server command")
    parser.add_argument("--label-a", default="A")
    parser.add_argument("--label-b", default="B")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--traces", type=int, default=600, help="runs per workload and round")
    parser.add_argument("--workloads", nargs="+", choices=tuple(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--corpus", nargs="+", type=Path,
                        default=[ROOT / "tests" / "frameworks" / "corpus", ROOT / "tests" / "teams" / "corpus"])
    parser.add_argument("--turns-per-session", type=int, default=1, help="runs per session in the with-id workload")
    parser.add_argument("--json", action="store_true", help="also print every round's figures as JSON")
    args = parser.parse_args()
    if args.turns_per_session < 1:
        parser.error("--turns-per-session must be at least 1 (the without-id workload has none)")
    loads = workloads(args.workloads, args.traces, args.corpus, args.turns_per_session)
    rounds = measure({"A": shlex.split(args.a), "B": shlex.split(args.b)}, loads, args.rounds)
    print(table(rounds, args.workloads, {"A": args.label_a, "B": args.label_b}))
    if args.json:
        print(json.dumps(rounds))


if __name__ == "__main__":
    main()
