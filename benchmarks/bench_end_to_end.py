"""End to end: a real ``mast-otel serve`` process, its CPU seconds per span until every run is stored.

    .venv/bin/python benchmarks/bench_end_to_end.py [--traces N] [--rounds R] [--wal on|off]
        [--server-command "PATH/TO/mast-otel serve"] [--postgres URL|start]

The server is a separate process started from the command line with the default
configuration (only its ports, its store path and, for the ingest-only figure, the grace
period are set). This process is the client: it sends pre-encoded OTLP/HTTP protobuf
requests (bench_decode's realistic agent runs, 26 spans each, 512 spans per request, fresh
trace ids per round) over two keep-alive connections, and reads the server's CPU time from
``/proc/<pid>/stat`` (user + system, every thread of the process).

Per round, alternating with the floor so that machine load hits both alike:

- floor: the protobuf decode-and-walk floor (``FromString`` + every span's attributes read
  into a dict, bench_decode's definition), measured in this process right before the round;
- ingest only: a server whose runs never complete during the round (grace one hour); server
  CPU seconds from the first request to the last acknowledgement;
- end to end: a server with the defaults (grace 2 s, sweep every 0.5 s); server CPU seconds
  from the first request until everything the server does for the workload is done: every run
  diagnosed and stored (receive, decode, assemble, diagnose, store, metrics) and every run that
  carries a session id kept as a turn and covered by its session's diagnosis (the sessions'
  worker runs after the run is stored; how many such runs the workload holds is counted here by
  decoding the requests). This process reads both counts from the server's SQLite store file
  every 0.25 s (read-only, beside the server: the store is in WAL mode), so waiting costs the
  server nothing; an API poll would cost it about 1.3 ms each, some 2-3% of the figure. Not
  counted: what comes ``sessions.quiet_seconds`` (30 minutes) later, when the sessions complete.

Reported: spans per server CPU-second (best round) and its ratio to the floor's best spans
per CPU-second in the session. ``--wal on`` sets ``wal.enabled`` in the server's configuration when
the configuration has that section (a no-op otherwise, and said so).
``--server-command`` runs another build of the server (a checkout with its own venv), so
two trees can be measured alternately in one session.

``--postgres URL`` adds, in every round right after the SQLite end-to-end figure, the same
end-to-end run with the server on the PostgreSQL store (``store.url``; a fresh database per round
on the server at URL, whose database must exist to connect to; ``start``: a throwaway server from
Debian's postgresql, as the tests start it). The round waits by counting the database's rows from
this process. Reported besides the server's CPU: the CPU seconds of the PostgreSQL backends
serving the server's connections (read from ``/proc``, so only for a server on this machine).

``--sessions-cost`` measures what grouping runs into sessions costs: every round runs the end-to-end
figure twice more, with ``sessions.enabled`` off and on (the order alternating per round); the
"on" round waits, as every end-to-end figure does, until every turn is in its session's diagnosis. The workload's runs already carry ``gen_ai.conversation.id``, one per
run; ``--turns-per-session K`` (default 5) rewrites it so each K consecutive runs are one session's turns
(1: every run a session of its own; 0: no run carries an id, as when the application gives none).
Each round's sessions figures are reported too (``rounds``), for the spread.

``--fsync-cost`` measures what the write-ahead log and its ``fsync`` cost: every round runs the
end-to-end figure three times more, with the log off, on with ``fsync: never`` and on with
``fsync: always`` (the order reversed every other round); it reports each round's figures and the
median over rounds of the two ratios taken within a round.

``--corpus DIR [DIR ...]`` replaces the synthetic runs with recordings real frameworks' own
instrumentation made (the content-capture variant of ``tests/frameworks/corpus`` and
``tests/teams/corpus``: single agents and teams, message content on, no mast.* hints), one
request per recording, repeated to ``--traces`` runs; a round waits for every trace holding an
agent, model or tool span to be stored.
"""

from __future__ import annotations

import argparse
import base64
import gc
import http.client
import json
import os
import shlex
import statistics
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode import BATCH, agent_traces  # noqa: E402  (the same workload)
from bench_ingest import SPANS_PER_RUN, bodies_with_fresh_ids, floor_rate, post_all  # noqa: E402  (and its floor)
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def has_wal_section(command: list[str]) -> bool:
    """Whether the server's configuration knows ``wal.enabled`` (asked of the server's own build)."""
    probe = subprocess.run([*command[:-1], "config"], capture_output=True, text=True)
    return probe.returncode == 0 and "\nwal:" in "\n" + probe.stdout


class Server:
    """A ``mast-otel serve`` subprocess on a free port with its own store."""

    def __init__(self, command: list[str], tmp: Path, *, grace: float | None, wal: bool | None,
                 fsync: str | None = None, store_url: str | None = None, sessions: bool | None = None) -> None:
        self.port = free_port()
        self.store_path = tmp / f"store-{time.monotonic_ns()}.sqlite"
        self.store_url = store_url
        self._store = None
        config: dict = {
            "receiver": {"host": "127.0.0.1", "http_port": self.port, "grpc_enabled": False},
            "store": {"url": store_url} if store_url else {"path": str(self.store_path)},
            "log_level": "WARNING",
        }
        if grace is not None:
            config["assembly"] = {"grace_seconds": grace, "idle_timeout_seconds": 3600}
        if sessions is not None:
            config["sessions"] = {"enabled": sessions}
        if wal is not None:
            config["wal"] = {"enabled": wal, **({"fsync": fsync} if fsync else {})}
        if store_url:  # the log goes next to store.path by default; here, in this run's folder
            config.setdefault("wal", {})["directory"] = str(self.store_path.with_suffix(".wal"))
        path = tmp / f"config-{self.port}.yaml"
        path.write_text(json.dumps(config))  # JSON is YAML
        self.process = subprocess.Popen([*command, "--config", str(path)], stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.process.stdout.read()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server not ready after 60 s")

    def stored(self) -> int:
        """Runs stored so far, read from the store by this process (the server does no work for it)."""
        if self._store is None:
            if self.store_url:
                import psycopg

                self._store = psycopg.connect(self.store_url, autocommit=True)
            else:
                self._store = sqlite3.connect(f"{self.store_path.as_uri()}?mode=ro", uri=True)
        return self._store.execute("SELECT COUNT(*) FROM diagnoses").fetchone()[0]

    def diagnosed_turns(self) -> int:
        """Turns covered by their sessions' latest diagnoses so far (read like ``stored``): the
        worker stores a turn, diagnoses its session and keeps that diagnosis last, so when this
        reaches the workload's turns the server has done everything sessions do for it."""
        self.stored()
        return self._store.execute("SELECT COALESCE(SUM(diagnosed_turns), 0) FROM conversations").fetchone()[0]

    def cpu(self) -> float:
        return cpu_seconds(self.process.pid)

    def store_cpu(self) -> dict[int, float]:
        """CPU seconds of each PostgreSQL backend serving this server's connections (none for SQLite)."""
        if not self.store_url:
            return {}
        self.stored()
        rows = self._store.execute("SELECT pid FROM pg_stat_activity WHERE application_name = 'mast-otel'").fetchall()
        return {pid: cpu_seconds(pid) for (pid,) in rows if Path(f"/proc/{pid}").exists()}

    def stop(self) -> None:
        if self._store is not None:
            self._store.close()
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def send(port: int, bodies: list[bytes], connections: int = 2) -> None:
    """POST every body over ``connections`` keep-alive connections; every request must be accepted."""
    failures = post_all("127.0.0.1", port, bodies, connections)
    if failures:
        raise RuntimeError(f"{len(failures)} requests refused, e.g. {failures[:5]}")


def ingest_only(command: list[str], tmp: Path, bodies: list[bytes], wal: bool | None) -> float:
    """Server CPU seconds to acknowledge every request, with no run completing meanwhile."""
    server = Server(command, tmp, grace=3600, wal=wal)
    try:
        before = server.cpu()
        send(server.port, bodies)
        return server.cpu() - before
    finally:
        server.stop()


def end_to_end(command: list[str], tmp: Path, bodies: list[bytes], runs: int, wal: bool | None,
               store_url: str | None = None, sessions: bool | None = None, turns: int = 0,
               fsync: str | None = None) -> tuple[float, float, float]:
    """Server CPU seconds until everything the server does for the workload is done, wall seconds
    and the store's CPU seconds (its PostgreSQL backends; 0 for SQLite, whose work is in the
    server's), with the default configuration (``sessions``: set ``sessions.enabled``). Done: every
    run stored and, unless sessions are off, ``turns`` turns (the workload's runs that carry a
    session id, :func:`session_turns`) covered by their sessions' diagnoses."""
    server = Server(command, tmp, grace=None, wal=wal, store_url=store_url, sessions=sessions, fsync=fsync)
    turns = 0 if sessions is False else turns
    try:
        store_before = server.store_cpu()
        before, started = server.cpu(), time.perf_counter()
        send(server.port, bodies)
        deadline = time.monotonic() + 600
        while server.stored() < runs or (turns and server.diagnosed_turns() < turns):
            if time.monotonic() > deadline:
                raise RuntimeError("runs not stored within 600 s")
            time.sleep(0.25)
        cpu, wall = server.cpu() - before, time.perf_counter() - started
        store = sum(now - store_before.get(pid, 0.0) for pid, now in server.store_cpu().items())
        return cpu, wall, store
    finally:
        server.stop()


class Postgres:
    """Fresh databases on a PostgreSQL server: one at ``url``, or a throwaway one (``start``)."""

    def __init__(self, url: str) -> None:
        self._throwaway = None
        if url == "start":
            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
            from tests.postgres import PostgresServer

            self._throwaway = PostgresServer()
            self._throwaway.start()
            url = self._throwaway.url("postgres")
        self.url = url
        self._count = 0

    def fresh(self) -> str:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        self._count += 1
        name = f"mast_bench_{os.getpid()}_{self._count}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        params = conninfo_to_dict(self.url)
        params["dbname"] = name
        user = f"{params['user']}@" if params.get("user") else ""
        return f"postgresql://{user}{params.get('host', '127.0.0.1')}:{params.get('port', 5432)}/{name}"

    def close(self) -> None:
        if self._throwaway is not None:
            self._throwaway.stop()


def corpus_requests(folders: list[Path], at_least: int) -> tuple[list[bytes], int, int]:
    """Protobuf requests of the recordings in ``folders`` (their content variant, not ``no-content/``),
    repeated until they hold ``at_least`` runs: (requests, spans, runs the server will store)."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from mast_otel.processors.ingest.decode import decode_protobuf
    from mast_otel.processors.model import OTHER

    once: list[tuple[bytes, int, int]] = []
    for folder in folders:
        for path in sorted(folder.glob("*/*.json")):
            if path.name == "manifest.json" or path.name.endswith(".logs.json"):  # a run's log records: not a recording
                continue
            doc = json.loads(path.read_text().splitlines()[0])
            for rs in doc.get("resourceSpans", []):  # the recordings write ids in hex; OTLP/JSON in protobuf wants base64
                for ss in rs.get("scopeSpans", []):
                    for span in ss.get("spans", []):
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if span.get(key):
                                span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
            body = json_format.ParseDict(doc, ExportTraceServiceRequest()).SerializeToString()
            decoded = decode_protobuf(body).spans
            once.append((body, len(decoded), len({s.trace_id for s in decoded if s.role is not OTHER})))
    per_round = sum(r for _, _, r in once)
    copies = max(1, -(-at_least // per_round))
    return ([_copy(b, c) for c in range(copies) for b, _, _ in once], copies * sum(n for _, n, _ in once),
            copies * per_round)


def _copy(body: bytes, number: int) -> bytes:
    """The request with its trace ids made the ``number``-th copy's (bytes 4-8; the round's salt takes 0-4)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest.FromString(body)
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                span.trace_id = span.trace_id[:4] + number.to_bytes(4, "big") + span.trace_id[8:]
    return request.SerializeToString()


def session_turns(template: list[bytes]) -> int:
    """How many of the requests' runs carry a session id (each becomes a turn of its session): the
    traces holding an agent, model or tool span and a span whose decoded conversation id is set."""
    from mast_otel.processors.ingest.decode import decode_protobuf
    from mast_otel.processors.model import OTHER

    runs: set[str] = set()
    with_id: set[str] = set()
    for body in template:
        for span in decode_protobuf(body).spans:
            if span.role is not OTHER:
                runs.add(span.trace_id)
            if span.conversation_id:
                with_id.add(span.trace_id)
    return len(runs & with_id)


def with_sessions_of(template: list[bytes], turns_per_session: int) -> list[bytes]:
    """The same batches with each run's ``gen_ai.conversation.id`` (``conv-N``) made ``conv-(N // K)``;
    ``K`` 0 takes the id away (runs whose application gives no session id)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    out = []
    for body in template:
        request = ExportTraceServiceRequest.FromString(body)
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    for i, kv in reversed(list(enumerate(span.attributes))):
                        if kv.key == "gen_ai.conversation.id" and kv.value.string_value.startswith("conv-"):
                            if not turns_per_session:
                                del span.attributes[i]
                                continue
                            kv.value.string_value = f"conv-{int(kv.value.string_value[5:]) // turns_per_session}"
        out.append(request.SerializeToString())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=600, help="runs per round (26 spans each)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--wal", choices=("on", "off"), help="set wal.enabled (when the server's configuration has it)")
    parser.add_argument("--server-command", default=f"{Path(sys.executable).parent / 'mast-otel'} serve",
                        help="the server to run (default: this venv's mast-otel serve)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--corpus", nargs="+", type=Path, help="recorded OTLP/JSON corpora to send instead (content variant)")
    parser.add_argument("--postgres", metavar="URL", help=(
        "also measure end to end on the PostgreSQL store: a server's URL (a database to connect to), or 'start'"))
    parser.add_argument("--sessions-cost", action="store_true",
                        help="also measure end to end with sessions.enabled off and on, alternating")
    parser.add_argument("--fsync-cost", action="store_true",
                        help="also measure end to end with the write-ahead log off, on with fsync never, and on with fsync always, alternating")
    parser.add_argument("--turns-per-session", type=int, default=5,
                        help="runs per session with --sessions-cost (0: runs carry no session id)")
    args = parser.parse_args()
    command = shlex.split(args.server_command)
    wal = None if args.wal is None else args.wal == "on"
    if wal is not None and not has_wal_section(command):
        print("note: this server has no wal section; --wal is a no-op", file=sys.stderr)
        wal = None

    if args.corpus:
        template, count, runs = corpus_requests(args.corpus, args.traces)
    else:
        spans = agent_traces(args.traces)
        template = [encode_spans(spans[i:i + BATCH]).SerializeToString() for i in range(0, len(spans), BATCH)]
        count, runs, spans = len(spans), len(spans) // SPANS_PER_RUN, None
        if args.sessions_cost:
            template = with_sessions_of(template, args.turns_per_session)
    turns = session_turns(template)  # the same for every round: fresh trace ids keep the sessions
    gc.collect()
    best: dict[str, float] = {}
    rounds: dict[str, list[int]] = {}  # every round's figure where the spread matters

    def keep(key: str, value: float) -> None:
        best[key] = max(best.get(key, 0.0), value)

    postgres = Postgres(args.postgres) if args.postgres else None
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for r in range(args.rounds):
            keep("floor_spans_per_cpu_s", floor_rate(template, 5, time.process_time))
            cpu = ingest_only(command, tmp, bodies_with_fresh_ids(template, 5000 + 3 * r), wal)
            keep("ingest_spans_per_cpu_s", count / cpu)
            keep("floor_spans_per_cpu_s", floor_rate(template, 5, time.process_time))
            cpu, wall, _ = end_to_end(command, tmp, bodies_with_fresh_ids(template, 5001 + 3 * r), runs, wal, turns=turns)
            keep("end_to_end_spans_per_cpu_s", count / cpu)
            keep("end_to_end_spans_per_wall_s", count / wall)
            if args.sessions_cost:
                for enabled in ((False, True) if r % 2 == 0 else (True, False)):
                    cpu, wall, _ = end_to_end(command, tmp, bodies_with_fresh_ids(template, 6000 + 2 * r + enabled), runs, wal,
                                              sessions=enabled, turns=turns)
                    keep(f"sessions_{'on' if enabled else 'off'}_spans_per_cpu_s", count / cpu)
                    rounds.setdefault(f"sessions_{'on' if enabled else 'off'}_spans_per_cpu_s", []).append(round(count / cpu))
            if args.fsync_cost:
                modes = [("log_off", False, None), ("fsync_never", True, "never"), ("fsync_always", True, "always")]
                for i, (name, on, fsync) in enumerate(modes if r % 2 == 0 else modes[::-1]):
                    cpu, _, _ = end_to_end(command, tmp, bodies_with_fresh_ids(template, 7000 + 3 * r + i), runs, on,
                                           turns=turns, fsync=fsync)
                    rounds.setdefault(f"{name}_spans_per_cpu_s", []).append(round(count / cpu))
            if postgres is not None:
                cpu, wall, store = end_to_end(command, tmp, bodies_with_fresh_ids(template, 5002 + 3 * r), runs, wal,
                                              postgres.fresh(), turns=turns)
                keep("postgresql_end_to_end_spans_per_cpu_s", count / cpu)
                keep("postgresql_end_to_end_spans_per_wall_s", count / wall)
                keep("postgresql_with_backends_spans_per_cpu_s", count / (cpu + store))
    if postgres is not None:
        postgres.close()
    # Against the best floor of the session: on a shared machine a single floor pass is as
    # noisy as the server's figure, and the best pass is the closest to the floor's true cost.
    best_floor = best["floor_spans_per_cpu_s"]
    best["ingest_vs_floor"] = best["ingest_spans_per_cpu_s"] / best_floor
    best["end_to_end_vs_floor"] = best["end_to_end_spans_per_cpu_s"] / best_floor
    if args.sessions_cost:
        best["sessions_on_vs_off"] = best["sessions_on_spans_per_cpu_s"] / best["sessions_off_spans_per_cpu_s"]
    if args.fsync_cost:  # per round, then the median: the load moves more between rounds than within one
        always, never, off = (rounds[f"{m}_spans_per_cpu_s"] for m in ("fsync_always", "fsync_never", "log_off"))
        best["fsync_always_vs_never"] = statistics.median(a / n for a, n in zip(always, never))
        best["fsync_never_vs_log_off"] = statistics.median(n / o for n, o in zip(never, off))
    if postgres is not None:
        best["postgresql_vs_sqlite"] = best["postgresql_end_to_end_spans_per_cpu_s"] / best["end_to_end_spans_per_cpu_s"]
    results: dict[str, object] = {"spans_per_round": count, "runs_per_round": runs, "load_average_1m": os.getloadavg()[0], **best}
    if rounds:
        results["rounds"] = rounds
    if args.json:
        print(json.dumps(results))
        return
    for key, value in results.items():
        print(f"{key:32s} {value:,.3f}" if isinstance(value, float) else f"{key:32s} {value:,}" if isinstance(value, int)
              else f"{key:32s} {value}")


if __name__ == "__main__":
    main()
