"""Durability scenarios for the write-ahead log, against real ``mast-otel serve`` subprocesses.

    .venv/bin/python benchmarks/durability.py [SCENARIO ...] [--runs N] [--no-write]

- ``restart``: the model and tool spans of ``--runs`` runs are acknowledged while the runs'
  agent spans have not ended; the processor is SIGKILLed and restarted on the same store and
  log; then the agent spans arrive. Every run must be diagnosed whole (all its spans), once.
- ``disk_full_injected``: the log's writer fails with ENOSPC after a byte budget (a script
  stands in for ``mast-otel serve`` and swaps the writer in); runs are posted until requests
  are refused, the processor is SIGKILLed, restarted with a working disk: every acknowledged
  run is stored, no refused one is.
- ``disk_full_tmpfs``: the same with the store and the log on a 3 MB tmpfs (needs
  ``mount``; skipped where it is not permitted), remounted larger before the restart.

Results go to docs/reliability.md between the ``durability`` markers; ``tests/reliability``
runs the same functions with fewer runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from docblock import write_doc_block
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from soak import DOC, PROTOBUF, ServeProcess, scrape, stored_total, total, wait_for


# --- runs as raw OTLP spans ----------------------------------------------------------------------
def _attrs(**values: Any) -> list[KeyValue]:
    out = []
    for key, value in values.items():
        key = key.replace("__", ".")
        v = AnyValue(int_value=value) if isinstance(value, int) and not isinstance(value, bool) else AnyValue(string_value=str(value))
        out.append(KeyValue(key=key, value=v))
    return out


@dataclass
class SplitRun:
    """One agent run: its model and tool spans, and its agent (root) span, sent apart."""

    trace_id: str
    steps: list[Span]
    root: Span

    @property
    def span_count(self) -> int:
        return len(self.steps) + 1


def make_runs(count: int, seed: int = 11) -> list[SplitRun]:
    rng = random.Random(seed)
    runs = []
    start = time.time_ns() - 60 * 10**9
    for n in range(count):
        trace_id, root_id = rng.randbytes(16), rng.randbytes(8)
        t = start + n * 10**6
        steps = []
        for i in range(rng.randint(3, 9)):
            model = i % 2 == 0
            name = "chat gpt-4o" if model else "execute_tool kubectl_get_pods"
            attrs = (_attrs(gen_ai__operation__name="chat", gen_ai__request__model="gpt-4o", gen_ai__agent__name="triage",
                            mast__step__index=i)
                     if model else
                     _attrs(gen_ai__operation__name="execute_tool", gen_ai__tool__name=f"kubectl_get_pods_{i}",
                            gen_ai__agent__name="triage", mast__step__index=i, mast__tool__kind="read"))
            steps.append(Span(trace_id=trace_id, span_id=rng.randbytes(8), parent_span_id=root_id, name=name,
                              kind=Span.SPAN_KIND_CLIENT, start_time_unix_nano=t + i * 1000, end_time_unix_nano=t + i * 1000 + 500,
                              attributes=attrs))
        root = Span(trace_id=trace_id, span_id=root_id, name="invoke_agent triage", kind=Span.SPAN_KIND_INTERNAL,
                    start_time_unix_nano=t, end_time_unix_nano=t + 100_000,
                    attributes=_attrs(gen_ai__operation__name="invoke_agent", gen_ai__agent__name="triage",
                                      mast__task__max_steps=20, mast__run__termination_reason="final_answer"))
        runs.append(SplitRun(trace_id.hex(), steps, root))
    return runs


def request(spans: list[Span]) -> bytes:
    rs = ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])
    rs.resource.attributes.extend(_attrs(service__name="durability-agent"))
    return ExportTraceServiceRequest(resource_spans=[rs]).SerializeToString()


def post(client: httpx.Client, url: str, body: bytes, *, retry_seconds: float = 0) -> int:
    """POST one request; retried on 429/503 for up to ``retry_seconds``; the last status."""
    deadline = time.monotonic() + retry_seconds
    while True:
        try:
            status = client.post(f"{url}/v1/traces", content=body, headers={"Content-Type": PROTOBUF}).status_code
        except httpx.HTTPError:
            status = 0
        if status == 200 or time.monotonic() >= deadline:
            return status
        time.sleep(0.2)


def diagnosed(url: str, runs: list[SplitRun]) -> dict[str, int]:
    """trace id -> span count of its stored diagnosis (absent: not stored)."""
    out = {}
    with httpx.Client(timeout=10) as client:
        for run in runs:
            r = client.get(f"{url}/v1/diagnoses/{run.trace_id}")
            if r.status_code == 200:
                out[run.trace_id] = r.json()["span_count"]
    return out


# --- scenarios -----------------------------------------------------------------------------------
def restart(workdir: Path, runs: int = 200, per_request: int = 10) -> dict[str, Any]:
    """Runs in flight at a SIGKILL resume after the restart and complete whole."""
    batch = make_runs(runs)
    serve = ServeProcess(workdir, {"assembly": {"grace_seconds": 0.5}})
    serve.start()
    acked = 0
    with httpx.Client(timeout=30) as client:
        for i in range(0, runs, per_request):
            part = batch[i:i + per_request]
            if post(client, serve.url, request([s for r in part for s in r.steps])) == 200:
                acked += len(part)
    stored_before_kill = stored_total(serve.url)
    serve.kill()
    started = time.monotonic()
    serve.start()
    restart_seconds = time.monotonic() - started
    m = scrape(serve.url)
    replayed = int(total(m, "mast_wal_replayed_spans_total"))
    in_flight_after_restart = int(total(m, "mast_traces_in_flight"))
    with httpx.Client(timeout=30) as client:
        for i in range(0, runs, per_request):
            post(client, serve.url, request([r.root for r in batch[i:i + per_request]]), retry_seconds=10)
    wait_for(lambda: stored_total(serve.url) >= runs and total(scrape(serve.url), "mast_traces_in_flight") == 0, 60, 0.3)
    counts = diagnosed(serve.url, batch)
    whole = sum(counts.get(r.trace_id) == r.span_count for r in batch)
    m = scrape(serve.url)
    traces_total = int(total(m, "mast_traces_total"))
    wal_bytes_after = int(total(m, "mast_wal_bytes"))
    serve.stop()
    return {
        "runs": runs, "steps_acked_for_runs": acked, "stored_before_kill": stored_before_kill,
        "replayed_spans": replayed, "spans_sent_before_kill": sum(len(r.steps) for r in batch),
        "in_flight_after_restart": in_flight_after_restart, "restart_seconds": round(restart_seconds, 2),
        "diagnosed_whole": whole, "stored": len(counts), "traces_total_after_restart": traces_total,
        "wal_bytes_after": wal_bytes_after,
        "held": acked == runs and stored_before_kill == 0 and whole == runs and traces_total == runs,
    }


@dataclass
class Ledger:
    """What the sender was told, per run (each run is one request)."""

    acked: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)
    statuses: dict[int, int] = field(default_factory=dict)


def _flood(url: str, runs: list[SplitRun], ledger: Ledger, stop_after_refusals: int) -> None:
    """One request per whole run, no retries, until enough refusals were seen."""
    refusals = 0
    with httpx.Client(timeout=30) as client:
        for run in runs:
            status = post(client, url, request([*run.steps, run.root]))
            ledger.statuses[status] = ledger.statuses.get(status, 0) + 1
            if status == 200:
                ledger.acked.add(run.trace_id)
            else:
                ledger.refused.add(run.trace_id)
                refusals += 1
                if refusals >= stop_after_refusals:
                    return


def _after_disk_full(serve: ServeProcess, batch: list[SplitRun], ledger: Ledger, extra: dict[str, Any]) -> dict[str, Any]:
    m = scrape(serve.url)
    wal_errors = {r: int(total(m, "mast_wal_append_errors_total", reason=r)) for r in ("no_space", "io_error", "log_full")}
    serve.kill()
    return {"sent": len(ledger.acked) + len(ledger.refused), "acked": len(ledger.acked), "refused": len(ledger.refused),
            "statuses": {str(k): v for k, v in sorted(ledger.statuses.items())}, "wal_append_errors_before_kill": wal_errors,
            **extra}


def _recovered(serve: ServeProcess, batch: list[SplitRun], ledger: Ledger, report: dict[str, Any]) -> dict[str, Any]:
    serve.start()
    wait_for(lambda: total(scrape(serve.url), "mast_traces_in_flight") == 0 and stored_total(serve.url) >= len(ledger.acked), 60, 0.3)
    counts = diagnosed(serve.url, batch)
    serve.stop()
    stored = set(counts)
    report.update({
        "stored_after_restart": len(stored), "acked_not_stored": len(ledger.acked - stored),
        "refused_but_stored": len(ledger.refused & stored),
        "acked_stored_whole": sum(counts.get(r.trace_id) == r.span_count for r in batch if r.trace_id in ledger.acked),
    })
    report["held"] = (report["acked_not_stored"] == 0 and report["refused_but_stored"] == 0 and report["refused"] > 0
                      and report["acked_stored_whole"] == report["acked"])
    return report


_FAULTY_SERVE = textwrap.dedent('''
    """mast-otel serve whose write-ahead log fails like a full disk after a byte budget."""
    import errno, os, sys
    from mast_otel.processors.service.wal import log

    budget = [int(os.environ["WAL_FAULT_AFTER_BYTES"])]

    def writev(fd, parts):
        size = sum(len(p) for p in parts)
        if size > budget[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        budget[0] -= size
        return os.writev(fd, parts)

    log.WRITEV = writev
    from mast_otel.processors.cli import main
    raise SystemExit(main(sys.argv[1:]))
''')


def disk_full_injected(workdir: Path, runs: int = 400, budget_bytes: int = 200_000) -> dict[str, Any]:
    """The log's writer fails with ENOSPC after ``budget_bytes``; SIGKILL; restart with a working disk."""
    batch = make_runs(runs, seed=23)
    script = workdir / "faulty_serve.py"
    workdir.mkdir(parents=True, exist_ok=True)
    script.write_text(_FAULTY_SERVE)
    serve = ServeProcess(workdir, {"assembly": {"grace_seconds": 3.0}}, env={"WAL_FAULT_AFTER_BYTES": str(budget_bytes)})
    serve.launcher = [sys.executable, str(script)]
    serve.start()
    ledger = Ledger()
    _flood(serve.url, batch, ledger, stop_after_refusals=20)
    report = _after_disk_full(serve, batch, ledger, {"budget_bytes": budget_bytes})
    serve.launcher = [sys.executable, "-m", "mast_otel.processors.cli"]
    return _recovered(serve, batch, ledger, report)


def can_mount_tmpfs(directory: Path) -> bool:
    directory.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(directory)], capture_output=True).returncode:
        return False
    subprocess.run(["umount", str(directory)], capture_output=True)
    return True


def disk_full_tmpfs(workdir: Path, runs: int = 4000, size: str = "3m") -> dict[str, Any] | None:
    """The store and the log on a small tmpfs; SIGKILL when full; remount larger and restart.
    ``None`` where tmpfs cannot be mounted."""
    disk = workdir / "disk"
    if not can_mount_tmpfs(disk):
        return None
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], check=True)
    try:
        batch = make_runs(runs, seed=31)
        serve = ServeProcess(workdir, {"assembly": {"grace_seconds": 1.0}, "store": {"path": str(disk / "store.sqlite")},
                                       "wal": {"segment_bytes": 256 * 1024}})
        serve.start()
        ledger = Ledger()
        _flood(serve.url, batch, ledger, stop_after_refusals=50)
        m = scrape(serve.url)
        store_errors = int(total(m, "mast_store_errors_total"))
        report = _after_disk_full(serve, batch, ledger, {"tmpfs": size, "store_errors_before_kill": store_errors})
        subprocess.run(["mount", "-o", "remount,size=256m", str(disk)], check=True)
        return _recovered(serve, batch, ledger, report)
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


SCENARIOS = {"restart": restart, "disk_full_injected": disk_full_injected, "disk_full_tmpfs": disk_full_tmpfs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help=f"any of {', '.join(SCENARIOS)} (default: all)")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    unknown = [name for name in args.scenarios if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {unknown[0]!r}; choose from {', '.join(SCENARIOS)}")
    results: dict[str, Any] = {}
    for name in args.scenarios or SCENARIOS:
        with tempfile.TemporaryDirectory(prefix=f"mast-{name}-") as tmp:
            started = time.monotonic()
            kwargs = {"runs": args.runs} if args.runs else {}
            result = SCENARIOS[name](Path(tmp), **kwargs)
            if result is not None:
                result["seconds"] = round(time.monotonic() - started, 1)
            results[name] = result if result is not None else "skipped: tmpfs cannot be mounted here"
        print(name, json.dumps(results[name]), flush=True)
    if not args.no_write:
        write_doc_block("durability", "```json\n" + json.dumps(results, indent=2) + "\n```", DOC)
    held = all(not isinstance(r, dict) or r["held"] for r in results.values())
    return 0 if held else 1


if __name__ == "__main__":
    raise SystemExit(main())
