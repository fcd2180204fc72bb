"""What grouping runs into sessions costs per turn, in process: CPU and SQL statements.

    .venv/bin/python benchmarks/bench_sessions.py [--turns N] [--turns-per-session K] [--rounds R]
        [--worker-batch B] [--interleave]

bench_decode's synthetic runs (26 spans each), decoded and assembled as the server would, each
carrying ``gen_ai.conversation.id`` (``K`` consecutive runs per session; default 1: every run a
session of its own, the most sessions cost). Per round, a fresh SQLite store and
``SessionTracker`` (default ``sessions`` settings): ``export`` as the sweeper calls it, in
batches of 24 runs (the turns' encoding), then the worker's ``_add_batch`` in batches of 256
(store, read back, diagnose, keep, count), then ``complete_quiet``. ``--worker-batch`` sets the
worker's batch, and ``--interleave`` hands the runs over turn by turn across sessions (every
session's first turn, then every second one, ...): with a batch smaller than the number of
sessions, each batch then holds one new turn of a session, as when a conversation's turns come
minutes apart, and each session is diagnosed again over all its turns as each one arrives. The garbage collector is off
while measuring (the server raises its young-generation threshold, so collections would land on
this benchmark far more often than in the server). Reported: CPU microseconds per turn (best
round) for the sweeper's part and the whole, and SQL statements per turn (each row of a batched
statement counted, as SQLite's trace callback sees them).

Not measured: the HTTP, decode, assembly and diagnosis of the runs themselves (the end-to-end
benchmarks measure the share of the whole), PostgreSQL, and sessions completing later.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import BATCH, agent_traces  # noqa: E402  (the same workload)
from bench_end_to_end import with_sessions_of  # noqa: E402
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402

from mast_otel.processors.config import SessionsConfig  # noqa: E402
from mast_otel.processors.ingest.decode import decode_protobuf  # noqa: E402
from mast_otel.processors.model import Run, Span  # noqa: E402
from mast_otel.processors.service.outputs.base import Batch, DiagnosedRun  # noqa: E402
from mast_otel.processors.service.outputs.conversations import SessionTracker  # noqa: E402
from mast_otel.processors.service.store.conversations import ConversationStore  # noqa: E402
from mast_otel.processors.service.store.diagnoses import DiagnosisStore  # noqa: E402
from mast_otel.processors.service.telemetry.metrics import Metrics  # noqa: E402

SWEEP = 24  # runs the sweeper hands over at once
WORKER = 256  # turns the worker takes at once (its MAX_BATCH)


def runs_of(turns: int, per_session: int) -> list[Run]:
    spans = agent_traces(turns)
    template = with_sessions_of([encode_spans(spans[i:i + BATCH]).SerializeToString()
                                 for i in range(0, len(spans), BATCH)], per_session)
    by_trace: dict[str, list[Span]] = {}
    for body in template:
        for span in decode_protobuf(body).spans:
            by_trace.setdefault(span.trace_id, []).append(span)
    return [Run.from_spans(trace_id, spans, completion="root_ended") for trace_id, spans in by_trace.items()]


def interleaved(runs: list[Run], per_session: int) -> list[Run]:
    """``runs`` (``per_session`` consecutive runs a session) reordered turn by turn across sessions."""
    sessions = [runs[i:i + per_session] for i in range(0, len(runs), per_session)]
    return [s[k] for k in range(per_session) for s in sessions if k < len(s)]


def one_round(runs: list[Run], tmp: Path, worker_batch: int = WORKER) -> tuple[float, float, int]:
    """(sweeper CPU seconds, all CPU seconds, statements) for the turns of ``runs``."""
    diagnoses = DiagnosisStore(tmp / f"d-{time.monotonic_ns()}.sqlite")
    statements = [0]

    def count(_: str) -> None:
        statements[0] += 1

    diagnoses.database._db.set_trace_callback(count)  # type: ignore[attr-defined]  # the SQLite connection's own
    tracker = SessionTracker(ConversationStore(diagnoses.database, max_turns=200, max_stored_sessions=100_000),
                             SessionsConfig(), Metrics())
    items = [DiagnosedRun("diagnosis", None, None, None, None, run=run) for run in runs]  # type: ignore[arg-type]
    gc.collect()
    gc.disable()
    try:
        started = time.process_time()
        for i in range(0, len(items), SWEEP):
            tracker.export(Batch(items[i:i + SWEEP]))
        sweeper = time.process_time() - started
        queued = list(tracker._queue)
        tracker._queue.clear()
        for i in range(0, len(queued), worker_batch):
            tracker._add_batch(queued[i:i + worker_batch])
        tracker.complete_quiet()
        total = time.process_time() - started
    finally:
        gc.enable()
        diagnoses.close()
    return sweeper, total, statements[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--turns-per-session", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--worker-batch", type=int, default=WORKER, help="turns the worker takes at once")
    parser.add_argument("--interleave", action="store_true", help="turns handed over turn by turn across sessions")
    args = parser.parse_args()
    runs = runs_of(args.turns, args.turns_per_session)
    if args.interleave:
        runs = interleaved(runs, args.turns_per_session)
    with tempfile.TemporaryDirectory() as tmp_name:
        figures = [one_round(runs, Path(tmp_name), args.worker_batch) for _ in range(args.rounds)]
    sweeper = min(f[0] for f in figures)
    total = min(f[1] for f in figures)
    print(f"turns per round                {len(runs):,}")
    print(f"sweeper (encode, queue)        {1e6 * sweeper / len(runs):,.1f} us per turn")
    print(f"all (and store, diagnose)      {1e6 * total / len(runs):,.1f} us per turn")
    print(f"statements                     {figures[0][2] / len(runs):.2f} per turn")


if __name__ == "__main__":
    main()
