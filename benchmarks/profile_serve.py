"""Where a real ``mast-otel serve`` spends its CPU on the content-on corpus: the share per stage.

    .venv/bin/python benchmarks/profile_serve.py [--servers N] [--traces N] [--rate HZ]
        [--corpus DIR ...] [--workload corpus|with-id|without-id] [--turns-per-session K]
        [--server-command "PATH/TO/mast-otel serve"] [--top K] [--json]

Each of ``--servers`` fresh servers (the default configuration, as ``bench_end_to_end.py`` starts
them) gets the content-on corpus workload of ``bench_end_to_end.py --corpus`` (the recordings of
``tests/frameworks/corpus`` and ``tests/teams/corpus``, message content on, repeated to
``--traces`` runs; ``--workload with-id`` or ``without-id``: ``compare_builds.py``'s synthetic
runs with a conversation id, ``--turns-per-session`` runs per session, or without one) while
py-spy samples it from outside: ``--nonblocking`` (the server is never
paused) and ``--gil`` (only the thread holding the interpreter lock is sampled, so a sample is
Python at work; a thread waiting on a lock, a socket or the WAL's fsync is not, as py-spy's idle
test is unreliable for those). Work done in C with the lock released (SQLite's statements, the
kernel's side of sockets and fsync) is therefore not sampled: the "coverage" printed is the
samples' seconds over the server's CPU seconds. Sampling stops once every run is stored and
every turn is in its session's diagnosis. The stacks of all servers are added up.

Each sample goes to one stage: the innermost frame of the project's own code that belongs to a
stage (below, ``STAGES``) names it, so a helper shared by several stages (``tools/values``,
``wire/hashing``, the frameworks' tables, ``model.py``) and library code (``json``, ``ast``,
protobuf, SQLite) count for the stage that called them. A sample with no stage frame is HTTP
when the receiving side (uvicorn, starlette, asyncio, ``service/receivers``) is on its stack,
else "other" (start-up, the sweeper's waits, the interpreter).

Printed: the share of samples per stage, the largest self times (leaf functions), the server's
CPU seconds and spans per server CPU-second, and the latter's ratio to the decode floor measured
in this process next to each server (``bench_ingest.floor_rate``). The figure is taken with the
sampler attached, so it reads a little lower than ``bench_end_to_end.py``'s; compare shares
between builds, and rates with ``bench_end_to_end.py``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_end_to_end import Server, corpus_requests, session_turns  # noqa: E402  (the same server and workload)
from bench_ingest import bodies_with_fresh_ids, floor_rate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CORPORA = [ROOT / "tests" / "frameworks" / "corpus", ROOT / "tests" / "teams" / "corpus"]

# (path inside the checkout, stage): the first that a frame's file starts with names its stage.
# Paths not listed (tools/, frameworks/, model.py, wire/, ...) are helpers: their time goes to
# the stage that called them.
STAGES: tuple[tuple[str, str], ...] = (
    ("processors/ingest/normalize/", "normalize"),
    ("processors/ingest/", "decode"),
    ("processors/service/wal/", "WAL"),
    ("processors/service/pipeline/assembler.py", "assemble"),
    ("processors/hints/", "hints and team model"),
    ("processors/team.py", "hints and team model"),
    ("processors/team_view.py", "hints and team model"),
    ("processors/detectors/live.py", "detectors (live)"),
    ("processors/detectors/", "detectors (rules)"),
    ("processors/attribution.py", "detectors (rules)"),
    ("processors/conversations/", "sessions"),
    ("processors/service/outputs/conversations.py", "sessions"),
    ("processors/service/store/conversations.py", "sessions"),
    ("processors/service/store/", "store"),
    ("processors/service/outputs/store.py", "store"),
    ("processors/service/telemetry/metrics.py", "metrics"),
    ("processors/service/outputs/metrics.py", "metrics"),
    ("processors/service/pipeline/merge.py", "merge and steps"),
    ("processors/step_names.py", "merge and steps"),
    ("processors/severity_from_outcomes.py", "merge and steps"),
    ("processors/what_to_do.py", "merge and steps"),
    ("processors/service/outputs/", "merge and steps"),
    ("processors/service/receivers/", "HTTP"),
)
# Library code that, with no stage frame on the stack, is the receiving side.
HTTP_MARKERS = ("/uvicorn/", "/uvloop/", "/starlette/", "/fastapi/", "/httptools/", "/h11/", "/anyio/", "/asyncio/",
                "processors/service/receivers/", "processors/service/api/", "processors/service/server.py")


def frame_file(frame: str) -> str:
    """The file of a py-spy frame ``function (file:line)``."""
    inside = frame[frame.rfind("(") + 1:-1] if frame.endswith(")") else frame
    return inside.rsplit(":", 1)[0]


def stage_of(frames: list[str], root: str) -> str:
    """The stage a stack (outermost frame first) counts for."""
    for frame in reversed(frames):
        path = frame_file(frame)
        if path.startswith(root):
            inside = path[len(root):]
            for prefix, stage in STAGES:
                if inside.startswith(prefix):
                    return stage
    if any(marker in frame_file(frame) for frame in frames for marker in HTTP_MARKERS):
        return "HTTP"
    return "other"


def short(frame: str, root: str) -> str:
    """A leaf frame as ``file:function`` with the checkout's or site-packages' prefix cut."""
    path = frame_file(frame)
    if path.startswith(root):
        path = path[len(root):]
    elif "site-packages/" in path:
        path = path.split("site-packages/", 1)[1]
    elif "/lib/python" in path:
        path = path.split("/lib/python", 1)[1].split("/", 1)[-1]
    function = frame[:frame.rfind(" (")] if " (" in frame else frame
    return f"{path}:{function}"


def read_raw(path: Path) -> Counter[str]:
    """py-spy's raw (collapsed) output: ``frame;frame;... count`` per line."""
    stacks: Counter[str] = Counter()
    if path.exists():
        for line in path.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if stack and count.isdigit():
                stacks[stack] += int(count)
    return stacks


def profile_one(command: list[str], tmp: Path, bodies: list[bytes], runs: int, rate: int, py_spy: str,
                index: int, turns: int = 0) -> tuple[Counter[str], float]:
    """One fresh server under py-spy from before the first request until every run is stored:
    (its stacks, its CPU seconds over the same time)."""
    server = Server(command, tmp, grace=None, wal=None)
    out = tmp / f"profile-{index}.raw"
    sampler = subprocess.Popen([py_spy, "record", "--pid", str(server.process.pid), "--rate", str(rate),
                                "--format", "raw", "--full-filenames", "--gil", "--nonblocking", "-o", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)  # py-spy attaches
        if sampler.poll() is not None:
            raise RuntimeError(f"py-spy could not sample the server: {sampler.stderr.read()}")
        before = server.cpu()
        from bench_end_to_end import send

        send(server.port, bodies)
        deadline = time.monotonic() + 600
        while server.stored() < runs or (turns and server.diagnosed_turns() < turns):
            if time.monotonic() > deadline:
                raise RuntimeError("runs not stored within 600 s")
            time.sleep(0.25)
        cpu = server.cpu() - before
    finally:
        sampler.send_signal(signal.SIGINT)
        try:
            sampler.wait(60)
        except subprocess.TimeoutExpired:
            sampler.kill()
            sampler.wait()
        server.stop()
    return read_raw(out), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", type=int, default=4, help="fresh servers, each sampled over one round")
    parser.add_argument("--traces", type=int, default=600, help="runs per server (the corpus repeated)")
    parser.add_argument("--rate", type=int, default=100, help="samples per second")
    parser.add_argument("--corpus", nargs="+", type=Path, default=CORPORA, help="recorded OTLP/JSON corpora (content variant)")
    parser.add_argument("--workload", choices=("corpus", "with-id", "without-id"), default="corpus",
                        help="the corpus (content on), or compare_builds.py's synthetic runs with or without a conversation id")
    parser.add_argument("--turns-per-session", type=int, default=1, help="runs per session (--workload with-id)")
    parser.add_argument("--server-command", default=f"{Path(sys.executable).parent / 'mast-otel'} serve",
                        help="the server to run (default: this venv's mast-otel serve)")
    parser.add_argument("--root", help="the server's checkout, for mapping frames (default: the one of --server-command)")
    parser.add_argument("--top", type=int, default=15, help="largest self times to print")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    command = shlex.split(args.server_command)
    py_spy = str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        sys.exit("py-spy is not installed in this venv (pip install -e '.[test]')")
    root = args.root or str(Path(command[0]).resolve().parents[2])
    root = root.rstrip("/") + "/"

    if args.workload == "corpus":
        template, spans, runs = corpus_requests(args.corpus, args.traces)
    else:
        from compare_builds import workloads

        load = workloads([args.workload], args.traces, args.corpus, args.turns_per_session)[0]
        template, spans, runs = load.template, load.spans, load.runs
    turns = session_turns(template)
    stacks: Counter[str] = Counter()
    cpu = 0.0
    floors: list[float] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        for index in range(args.servers):
            floors.append(floor_rate(template, 5, time.process_time))
            found, seconds = profile_one(command, Path(tmp_name), bodies_with_fresh_ids(template, 7000 + index),
                                         runs, args.rate, py_spy, index, turns)
            stacks.update(found)
            cpu += seconds

    by_stage: Counter[str] = Counter()
    self_time: Counter[str] = Counter()
    for stack, count in stacks.items():
        frames = stack.split(";")
        by_stage[stage_of(frames, root)] += count
        self_time[short(frames[-1], root)] += count
    total = sum(by_stage.values()) or 1
    rate = spans * args.servers / cpu if cpu else 0.0
    floor = max(floors)
    results = {
        "servers": args.servers, "spans_per_server": spans, "runs_per_server": runs, "samples": total,
        "server_cpu_s": round(cpu, 2), "spans_per_cpu_s": round(rate), "floor_spans_per_cpu_s": round(floor),
        "vs_floor": round(rate / floor, 3), "coverage": round(total / args.rate / cpu, 2) if cpu else 0.0,
        "stages": {stage: round(100 * n / total, 1) for stage, n in by_stage.most_common()},
        "self": {name: round(100 * n / total, 1) for name, n in self_time.most_common(args.top)},
    }
    if args.json:
        print(json.dumps(results))
        return
    print(f"{args.servers} servers x {spans} spans ({runs} runs), {total} samples at {args.rate} Hz "
          f"(coverage {results['coverage']:.2f}), {cpu:.1f} server CPU-s: {rate:,.0f} spans per CPU-s, "
          f"{rate / floor:.3f} of the floor ({floor:,.0f})")
    print("\n| stage | share of server CPU |\n|---|---|")
    for stage, share in results["stages"].items():
        print(f"| {stage} | {share:.1f}% |")
    print("\n| largest self times | share |\n|---|---|")
    for name, share in results["self"].items():
        print(f"| `{name}` | {share:.1f}% |")


if __name__ == "__main__":
    main()
