"""``mast-otel demo``: the whole product in one command, no Docker, Grafana or API key.

Starts the processor in-process (SQLite in a temporary folder; the standard ports when free),
runs the simulated SRE agent fleet through the real instrumentation and real OTLP export,
waits for the processor's diagnoses, prints a per-model table computed from them and the
URLs to look at, then keeps serving (one more incident every few seconds, so metrics keep
moving) until Ctrl-C, or exits with ``--once``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from mast_otel.demo.models import PROFILES
from mast_otel.demo.ports import choose_port
from mast_otel.demo.prometheus import StackPorts
from mast_otel.processors.usage import UsageError, number_at_least, port_number

DEFAULT_RUNS_SIMULATED = 20
DEFAULT_RUNS_REAL = 3
DIAGNOSIS_TIMEOUT_SECONDS = 60.0
SERVICE_NAME = "sre-agent-demo"
HOST = "127.0.0.1"
DEFAULT_PORTS = {"--http-port": 4318, "--grpc-port": 4317, "--prometheus-port": 9090, "--alertmanager-port": 9093}


class _RenamedFlag(argparse.Action):
    """An old spelling still accepted (``--port``, now ``--http-port`` as for ``serve``); ``run``
    says it is deprecated."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.renamed = [*getattr(namespace, "renamed", []), f"{option_string} is deprecated; use {self.metavar}"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=number_at_least(1), default=None,
                        help=f"incidents per model (default {DEFAULT_RUNS_SIMULATED}; {DEFAULT_RUNS_REAL} with --model)")
    parser.add_argument("--once", action="store_true", help="exit after printing the results instead of serving")
    parser.add_argument("--seed", type=int, default=7, help="seed for incidents and simulated models (default 7)")
    parser.add_argument("--model", action="append", metavar="LITELLM_MODEL",
                        help="run the agent on a real model (a litellm model string, your own API key); repeatable. "
                             f"Default: the simulated models {', '.join(PROFILES)}")
    parser.add_argument("--http-port", type=port_number, default=None,
                        help=f"OTLP/HTTP, API and web view port (default {DEFAULT_PORTS['--http-port']}, another free one if "
                             "taken; 0: any free port)")
    parser.add_argument("--port", dest="http_port", type=port_number, default=argparse.SUPPRESS, action=_RenamedFlag,
                        metavar="--http-port", help=argparse.SUPPRESS)
    parser.add_argument("--grpc-port", type=port_number, default=None,
                        help=f"OTLP/gRPC port (default {DEFAULT_PORTS['--grpc-port']}, another free one if taken; 0: any)")
    parser.add_argument("--prometheus", action="store_true",
                        help="also start local Prometheus and Alertmanager (when installed) with the project's alert rules")
    parser.add_argument("--prometheus-port", type=port_number, default=None,
                        help=f"with --prometheus: Prometheus port (default {DEFAULT_PORTS['--prometheus-port']}, "
                             "another free one if taken)")
    parser.add_argument("--alertmanager-port", type=port_number, default=None,
                        help=f"with --prometheus: Alertmanager port (default {DEFAULT_PORTS['--alertmanager-port']}, "
                             "another free one if taken)")
    parser.add_argument("--no-content", action="store_true",
                        help="do not capture message content (the demo captures its synthetic content by default)")
    parser.add_argument("--guards", action="store_true",
                        help="run the same incidents (same seeds) twice, without and with the runtime guards enforced, "
                             "and print both side by side with the guards' interventions")
    parser.add_argument("--interval", type=number_at_least(0, float), default=3.0,
                        help="while serving, run one more incident every this many seconds (0: none)")


def run(args: argparse.Namespace) -> int:
    check_arguments(args)
    for note in getattr(args, "renamed", ()):
        print(f"mast-otel demo: {note}", file=sys.stderr)
    ports = Ports.choose(args)  # before anything starts: a port the user chose that is taken is a UsageError
    for note in ports.notes:
        print(f"mast-otel demo: {note}", file=sys.stderr)
    # SIGTERM unwinds like Ctrl-C, so the processor, Prometheus and the temporary folder are cleaned up.
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    workdir = Path(tempfile.mkdtemp(prefix="mast-otel-demo-"))
    try:
        return _demo(args, workdir, sys.stdout, sys.stderr, ports=ports)
    finally:
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(workdir, ignore_errors=True)


def check_arguments(args: argparse.Namespace) -> None:
    """Reject what cannot work before anything starts (each a one-line :class:`UsageError`)."""
    from mast_otel.processors.credentials import require_credentials

    if args.once and args.prometheus:
        raise UsageError("--prometheus needs the demo to keep serving; drop --once")
    for model in args.model or ():
        if model not in PROFILES:
            require_credentials(model, "--model")


@dataclass(frozen=True)
class Ports:
    """The ports the demo listens on, and a note for each that moved off its default."""

    http: int
    grpc: int
    stack: StackPorts | None
    notes: tuple[str, ...]

    @classmethod
    def choose(cls, args: argparse.Namespace) -> Ports:
        notes: list[str] = []

        def pick(flag: str) -> int:
            return choose_port(getattr(args, flag[2:].replace("-", "_")), DEFAULT_PORTS[flag], flag, notes, HOST)

        http, grpc = pick("--http-port"), pick("--grpc-port")
        stack = StackPorts(pick("--prometheus-port"), pick("--alertmanager-port")) if args.prometheus else None
        return cls(http, grpc, stack, tuple(notes))


def _config(workdir: Path, ports: Ports) -> Any:
    from mast_otel.processors.config import ProcessorConfig

    return ProcessorConfig(
        receiver={"host": HOST, "http_port": ports.http, "grpc_port": ports.grpc},
        store={"path": workdir / "diagnoses.sqlite"},
        assembly={"grace_seconds": 0.2, "sweep_interval_seconds": 0.1},
    )


def _demo(args: argparse.Namespace, workdir: Path, out: TextIO, err: TextIO,
          stop: threading.Event | None = None, ports: Ports | None = None) -> int:
    """The demo proper; serving ends at Ctrl-C, SIGTERM or when ``stop`` is set (tests)."""
    from mast_otel.processors.service.server import ProcessorServer

    ports = ports or Ports.choose(args)
    models = args.model or list(PROFILES)
    per_model = args.runs or (DEFAULT_RUNS_REAL if args.model else DEFAULT_RUNS_SIMULATED)
    print(f"mast-otel demo: starting the processor (data in {workdir})", file=err)
    server = ProcessorServer(_config(workdir, ports))
    stack = None
    provider = None
    try:
        try:
            server.start()  # a failed start shuts down what it started; the finally below is then a no-op
        except OSError as exc:  # a port taken between the choice and the start
            raise UsageError(f"cannot start the processor: {exc}") from None
        provider = _tracing(server.http_url, capture_content=not args.no_content)
        fleets = [Fleet(models, args.seed)]
        if args.guards:
            from mast_otel.instrumentation.guards import GuardConfig

            fleets.append(Fleet(models, args.seed, guards=GuardConfig.all("enforce")))
        runs_each = per_model * len(models)
        total = runs_each * len(fleets)  # with --guards every incident runs twice: the bar counts both
        started = time.monotonic()
        done = 0
        for _ in range(runs_each):
            for fleet in fleets:
                fleet.run_next()
                done += 1
                _progress(err, done, total)
        provider.force_flush()
        trace_ids = [t for fleet in fleets for t in fleet.trace_ids]
        diagnosed = _wait_for_diagnoses(server, trace_ids)
        print(f"\n{diagnosed} of {len(trace_ids)} runs diagnosed in {time.monotonic() - started:.1f}s\n", file=err)
        if args.guards:
            print(format_guard_table(server.store, fleets[0], fleets[1]), file=out)
        else:
            print(format_table(server.reader.query(limit=max(runs_each, 1))), file=out)
        fleet = fleets[-1]
        out.flush()
        if args.once:  # the processor stops now: its URLs would lead nowhere
            return 0 if diagnosed == len(trace_ids) else 1
        if ports.stack is not None:
            from mast_otel.demo.prometheus import start_local_stack

            stack = start_local_stack(server.http_url.split("://", 1)[1], workdir, ports.stack)
        print(format_urls(server, stack), file=out)
        out.flush()
        print("Serving; press Ctrl-C to stop.", file=err)
        stop = stop or threading.Event()
        while not stop.wait(args.interval if args.interval > 0 else 3600):
            if args.interval > 0:
                fleet.run_next()
                provider.force_flush()
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        if provider is not None:
            provider.shutdown()
        if stack is not None:
            stack.stop()
        server.stop()


def _tracing(endpoint: str, *, capture_content: bool) -> Any:
    """A tracer provider of the demo's own (not the global one), exporting to the processor."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    from mast_otel.instrumentation import instrument_litellm, setup_tracing

    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE_NAME}))
    setup_tracing(endpoint, tracer_provider=provider, capture_content=capture_content)
    instrument_litellm()
    return provider


class Fleet:
    """Round-robin over the models; every incident gets its own reproducible RNG streams."""

    def __init__(self, models: list[str], seed: int, guards: Any = None) -> None:
        from mast_otel.demo.agent import scenarios

        self.models = models
        self.seed = seed
        self.guards = guards  # a GuardConfig: every run guarded
        self.count = 0
        self.trace_ids: list[str] = []
        self.results: list[Any] = []
        self._scenarios = scenarios(1000, random.Random(seed))

    def run_next(self) -> Any:
        from mast_otel.demo.agent import make_model, run_incident

        n = self.count
        self.count += 1
        model_name = self.models[n % len(self.models)]
        index = n // len(self.models)
        scenario = self._scenarios[index % len(self._scenarios)]
        model = make_model(model_name, random.Random(f"{self.seed}/{model_name}/{index}"))
        result = run_incident(model, scenario, random.Random(f"{self.seed}/cluster/{index}"), guards=self.guards)
        self.trace_ids.append(result.trace_id)
        self.results.append(result)
        return result


def _progress(err: TextIO, done: int, total: int, width: int = 30) -> None:
    """A bar redrawn in place on a terminal; logs and pipes get only the final line."""
    live = _is_tty(err)
    if not live and done < total:
        return
    filled = round(width * done / total)
    start, end = ("\r" if live else ""), ("\n" if done == total else "")
    err.write(f"{start}  agent runs [{'#' * filled}{'.' * (width - filled)}] {done}/{total}{end}")
    err.flush()


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed or not a real stream
        return False


def _wait_for_diagnoses(server: Any, trace_ids: list[str], timeout: float = DIAGNOSIS_TIMEOUT_SECONDS) -> int:
    """Poll the store until every run is diagnosed (or the deadline passes); how many were."""
    deadline = time.monotonic() + timeout
    pending = set(trace_ids)
    while pending and time.monotonic() < deadline:
        pending = {t for t in pending if server.store.get(t) is None}
        if pending:
            time.sleep(0.1)
    return len(trace_ids) - len(pending)


def format_table(diagnoses: list[Any]) -> str:
    """The per-model table: runs, success rate, modes per failed run, share of runs with a fatal-rated mode, top modes."""
    from mast_otel.processors.web.summary import decimal, percent, summarize

    rows = [("model", "runs", "success", "modes/failed run", "fatal-rated", "top modes")]
    for s in summarize(diagnoses):
        top = ", ".join(f"{m} ({n})" for m, n in s.top_modes())
        rows.append((s.model, str(s.runs), percent(s.success_rate), decimal(s.modes_per_failed_run),
                     percent(s.fatal_share), top or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for i, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:-1], widths[1:])] + [row[-1]]
        lines.append("  ".join(cells))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 9)
    return "\n".join(lines)


def guard_comparison(store: Any, plain: Fleet, guarded: Fleet) -> list[dict[str, Any]]:
    """Per model: the same incidents (same seeds) without and with guards, from the processor's diagnoses.

    A false intervention is an intervention on a guarded run whose unguarded twin succeeded: the
    run would have succeeded anyway.
    """
    from mast_otel.processors.web.summary import summarize

    rows = []
    for model in plain.models:
        pairs = [(a, b) for a, b in zip(plain.results, guarded.results) if a.model == model]
        before = summarize([d for a, _ in pairs if (d := store.get(a.trace_id)) is not None])
        after = summarize([d for _, b in pairs if (d := store.get(b.trace_id)) is not None])
        interventions = sum(len(b.interventions) for _, b in pairs)
        false = sum(len(b.interventions) for a, b in pairs if a.outcome == "success")
        rows.append({
            "model": model, "runs": len(pairs),
            "success_without": before[0].success_rate if before else None,
            "success_with": after[0].success_rate if after else None,
            "modes_without": before[0].modes_per_failed_run if before else None,
            "modes_with": after[0].modes_per_failed_run if after else None,
            "interventions_per_run": interventions / len(pairs) if pairs else 0.0,
            "interventions": interventions, "false_interventions": false,
            "guarded_runs_that_would_have_succeeded": sum(1 for a, b in pairs if a.outcome == "success" and b.interventions),
        })
    return rows


def intervention_breakdown(plain: Fleet, guarded: Fleet) -> str:
    """Which guards intervened (all models), which of those were false, and which runs changed outcome."""
    every: dict[str, int] = {}
    false: dict[str, int] = {}
    for a, b in zip(plain.results, guarded.results):
        for guard, action in b.interventions:
            key = f"{guard} {action}"
            every[key] = every.get(key, 0) + 1
            if a.outcome == "success":
                false[key] = false.get(key, 0) + 1
    fixed = sum(1 for a, b in zip(plain.results, guarded.results) if a.outcome == "failure" and b.outcome == "success")
    broke = sum(1 for a, b in zip(plain.results, guarded.results) if a.outcome == "success" and b.outcome == "failure")
    listed = ", ".join(f"{k} {n} ({false.get(k, 0)} false)" for k, n in sorted(every.items(), key=lambda kv: -kv[1]))
    return (f"Interventions: {listed or 'none'}. Runs whose outcome changed with guards: "
            f"{fixed} failure -> success, {broke} success -> failure.")


def format_guard_table(store: Any, plain: Fleet, guarded: Fleet) -> str:
    """Without and with guards side by side, per model, plus the guards' interventions."""
    from mast_otel.processors.web.summary import decimal, percent

    header = ("model", "runs", "success w/o", "success with", "modes/failed w/o", "modes/failed with",
              "interventions/run", "false interventions")
    rows = [header]
    for r in guard_comparison(store, plain, guarded):
        share = r["false_interventions"] / r["interventions"] if r["interventions"] else None
        rows.append((r["model"], str(r["runs"]), percent(r["success_without"]), percent(r["success_with"]),
                     decimal(r["modes_without"]), decimal(r["modes_with"]), decimal(r["interventions_per_run"]),
                     f"{r['false_interventions']} of {r['interventions']} ({percent(share)})"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join([row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    lines.append(intervention_breakdown(plain, guarded))
    lines.append("Same incidents and seeds both ways; guards enforced: loop, budget and done, verification gate, "
                 "clarify-or-read-only. A false intervention is one on a run that succeeded without guards. "
                 "The models are scripted simulations.")
    return "\n".join(lines)


def format_urls(server: Any, stack: Any = None) -> str:
    base = server.http_url
    lines = [
        "",
        f"Web view      {base}/",
        f"Diagnoses API {base}/v1/diagnoses   (one run: {base}/v1/diagnoses/<trace_id>)",
        f"Metrics       {base}/metrics",
        f"OTLP/HTTP     {base}/v1/traces   OTLP/gRPC 127.0.0.1:{server.grpc_port}",
    ]
    if stack is not None:
        lines += [f"{name:<13} {url}" for name, url in stack.urls.items()]
        lines += [f"note: {n}" for n in stack.notes]
    return "\n".join(lines)
