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
- ``folder_deleted``: runs acknowledged; the log's folder deleted and a file put in its place
  (requests must get 503 and ``/readyz`` turn false); the file removed (the log repairs
  itself); more runs; the folder deleted again; more runs; SIGKILL, restart: every
  acknowledged run diagnosed whole.
- ``io_error``: the log's writer fails with EIO while a flag file exists (a script stands in
  for ``serve``): 503 and ``/readyz`` false while it does, 200 again once it is gone; SIGKILL,
  restart: every acknowledged run diagnosed whole.
- ``corrupt_record``: runs in flight, SIGKILL, one byte flipped in the middle of the log,
  restart: only the runs of the damaged record lose their steps; the file is not cut.
- ``foreign_entries``: runs in flight, SIGKILL, a directory and a symlink named ``*.wal`` and
  another file put in the log's folder, restart: it starts, warns, every run diagnosed whole.
- ``late_spans``: runs diagnosed, then one late span each, SIGKILL before their re-diagnosis,
  restart, then a second late span each: every run stored with both; with a short
  retention, late spans for runs diagnosed and forgotten before the restart are answered
  with a partial success naming them.
- ``evicted``: ``max_traces_in_flight`` 30 against 200 runs sent in two halves (the first
  halves are evicted, the second revive them), SIGKILL, restart, the agent spans: every run's
  stored span count equals the spans acknowledged for it.
- ``log_disk_full``: the log alone on a 1 MB tmpfs with the default retention, runs until 30
  refusals: ``/readyz`` false and one ERROR line while full, requests taken again within a
  sweep or two (the retained runs give their space back), one WARNING line; SIGKILL, restart:
  every acknowledged run stored, no refused one.
- ``log_read_only``: the log's folder made immutable while runs settle and their segments are
  due for deletion, then writable again: ``/readyz`` false with one ERROR line, true again
  with one WARNING line; SIGKILL, restart: every acknowledged run stored whole.

Results go to docs/reliability.md between the ``durability`` markers; ``tests/reliability``
runs the same functions with fewer runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
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
import yaml
from docblock import write_doc_block
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from soak import DOC, PROTOBUF, ServeProcess, rejected_spans, scrape, stored_total, total, wait_for


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


def _flood(url: str, runs: list[SplitRun], ledger: Ledger, stop_after_refusals: int) -> int | None:
    """One request per whole run, no retries, until enough refusals were seen; what ``/readyz``
    said while the log refused (503 when a 503 was seen from the first refusal on: the readiness
    is asked every few milliseconds by another thread meanwhile, as the log may free room again
    within a sweep), ``None`` without a refusal."""
    refusals = 0
    with httpx.Client(timeout=30) as client, _ReadinessWatch(url) as watch:
        for run in runs:
            status = post(client, url, request([*run.steps, run.root]))
            ledger.statuses[status] = ledger.statuses.get(status, 0) + 1
            if status == 200:
                ledger.acked.add(run.trace_id)
                continue
            ledger.refused.add(run.trace_id)
            refusals += 1
            if refusals == 1:
                watch.refused_at = time.monotonic()
            if refusals >= stop_after_refusals:
                break
    return watch.status_while_refused()


class _ReadinessWatch:
    """Asks ``/readyz`` over and over on a thread of its own, keeping each answer and its time."""

    def __init__(self, url: str, every: float = 0.01) -> None:
        self.url, self.every = url, every
        self.answers: list[tuple[float, int]] = []  # (time the answer came, status)
        self.refused_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._ask, daemon=True)

    def __enter__(self) -> "_ReadinessWatch":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _ask(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self._stop.wait(self.every):
                try:
                    status = client.get(f"{self.url}/readyz").status_code
                except httpx.HTTPError:
                    status = 0
                self.answers.append((time.monotonic(), status))

    def status_while_refused(self) -> int | None:
        """503 if readiness was seen false once the log had refused, else the first answer after
        that refusal; ``None`` without a refusal."""
        if self.refused_at is None:
            return None
        after = [status for at, status in self.answers if at >= self.refused_at]
        return 503 if 503 in after else (after[0] if after else _ready(self.url))


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


# --- the log's own files damaged or taken away -------------------------------------------------
def _post_runs(url: str, runs: list[SplitRun], ledger: Ledger, *, per_request: int = 10, retry_seconds: float = 0,
               parts=lambda r: r.steps) -> list[int]:
    """Post ``parts`` of ``runs``, ``per_request`` runs a request; the statuses; acked runs in ``ledger``."""
    statuses = []
    with httpx.Client(timeout=30) as client:
        for i in range(0, len(runs), per_request):
            chunk = runs[i:i + per_request]
            status = post(client, url, request([s for r in chunk for s in parts(r)]), retry_seconds=retry_seconds)
            statuses.append(status)
            ledger.statuses[status] = ledger.statuses.get(status, 0) + 1
            (ledger.acked if status == 200 else ledger.refused).update(r.trace_id for r in chunk)
    return statuses


def _ready(url: str) -> int:
    try:
        return httpx.get(f"{url}/readyz", timeout=5).status_code
    except httpx.HTTPError:
        return 0


def _finish_runs(serve: ServeProcess, runs: list[SplitRun], acked: set[str]) -> dict[str, int]:
    """After a restart: the agent spans of every run, then how many acknowledged runs are whole."""
    _post_runs(serve.url, runs, Ledger(), retry_seconds=10, parts=lambda r: [r.root])
    wait_for(lambda: total(scrape(serve.url), "mast_traces_in_flight") == 0 and stored_total(serve.url) >= len(runs), 60, 0.3)
    counts = diagnosed(serve.url, runs)
    whole = sum(counts.get(r.trace_id) == r.span_count for r in runs if r.trace_id in acked)
    return {"acked": len(acked), "acked_stored_whole": whole, "acked_missing_steps": len(acked) - whole}


def folder_deleted(workdir: Path, runs: int = 300) -> dict[str, Any]:
    """The log's folder deleted while serving (once with a file put in its way), then SIGKILL."""
    batch = make_runs(runs, seed=41)
    first, second, third = batch[:runs // 3], batch[runs // 3:2 * runs // 3], batch[2 * runs // 3:]
    serve = ServeProcess(workdir, {"assembly": {"grace_seconds": 0.5}})
    folder = workdir / "store.wal"
    serve.start()
    ledger = Ledger()
    _post_runs(serve.url, first, ledger)
    shutil.rmtree(folder)
    folder.write_text("not the log")  # the folder cannot come back while this is here
    blocked = _post_runs(serve.url, second[:20], Ledger())
    wait_for(lambda: _ready(serve.url) == 503, 10)
    ready_blocked = _ready(serve.url)
    with httpx.Client(timeout=10) as client:
        refused = client.post(f"{serve.url}/v1/traces", content=request(second[0].steps), headers={"Content-Type": PROTOBUF})
    refused_reason = int(total(scrape(serve.url), "mast_ingest_refused_requests_total", reason="wal_io_error"))
    folder.unlink()
    wait_for(lambda: _ready(serve.url) == 200, 10)
    ready_after = _ready(serve.url)
    _post_runs(serve.url, second, ledger, retry_seconds=10)
    shutil.rmtree(folder, ignore_errors=True)  # gone again, nothing in the way this time
    _post_runs(serve.url, third, ledger, retry_seconds=10)
    faults = int(total(scrape(serve.url), "mast_wal_faults_total"))
    serve.kill()
    serve.start()
    report = _finish_runs(serve, batch, ledger.acked)
    log_text = serve.log()
    serve.stop()
    report.update({
        "statuses_while_blocked": {str(k): blocked.count(k) for k in sorted(set(blocked))},
        "retry_after_while_blocked": refused.headers.get("Retry-After"), "refused_wal_io_error": refused_reason,
        "ready_while_blocked": ready_blocked, "ready_after": ready_after, "faults": faults,
        "fault_log_lines": log_text.count("readiness is false until it is repaired"),
        "repaired_log_lines": log_text.count("repaired after"),
    })
    report["held"] = (report["acked_missing_steps"] == 0 and report["acked"] == runs and set(blocked) == {503}
                      and ready_blocked == 503 and ready_after == 200 and refused.status_code == 503
                      and refused_reason > 0 and report["fault_log_lines"] >= 2 and report["repaired_log_lines"] >= 2)
    return report


_FAILING_SERVE = textwrap.dedent('''
    """mast-otel serve whose write-ahead log fails with EIO while the file WAL_FAULT_FLAG exists."""
    import errno, os, sys
    from mast_otel.processors.service.wal import log

    flag = os.environ["WAL_FAULT_FLAG"]

    def writev(fd, parts):
        if os.path.exists(flag):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return os.writev(fd, parts)

    log.WRITEV = writev
    from mast_otel.processors.cli import main
    raise SystemExit(main(sys.argv[1:]))
''')


def io_error(workdir: Path, runs: int = 150) -> dict[str, Any]:
    """Every append fails with an I/O error for a while: refused and not ready, then back."""
    batch = make_runs(runs, seed=43)
    first, second = batch[:runs // 2], batch[runs // 2:]
    workdir.mkdir(parents=True, exist_ok=True)
    script, flag = workdir / "failing_serve.py", workdir / "fail-now"
    script.write_text(_FAILING_SERVE)
    serve = ServeProcess(workdir, {"assembly": {"grace_seconds": 0.5}}, env={"WAL_FAULT_FLAG": str(flag)})
    serve.launcher = [sys.executable, str(script)]
    serve.start()
    ledger = Ledger()
    _post_runs(serve.url, first, ledger)
    flag.touch()
    failing = _post_runs(serve.url, second[:20], Ledger())
    ready_failing = _ready(serve.url)
    flag.unlink()
    wait_for(lambda: _ready(serve.url) == 200, 10)
    ready_after = _ready(serve.url)
    _post_runs(serve.url, second, ledger, retry_seconds=10)
    serve.kill()
    serve.launcher = [sys.executable, "-m", "mast_otel.processors.cli"]
    serve.start()
    report = _finish_runs(serve, batch, ledger.acked)
    serve.stop()
    report.update({"statuses_while_failing": {str(k): failing.count(k) for k in sorted(set(failing))},
                   "ready_while_failing": ready_failing, "ready_after": ready_after})
    report["held"] = (report["acked_missing_steps"] == 0 and report["acked"] == runs and set(failing) == {503}
                      and ready_failing == 503 and ready_after == 200)
    return report


def corrupt_record(workdir: Path, runs: int = 200, per_request: int = 10) -> dict[str, Any]:
    """One byte flipped in the middle of the log between a SIGKILL and the restart."""
    batch = make_runs(runs, seed=47)
    serve = ServeProcess(workdir, {"assembly": {"grace_seconds": 0.5}})
    serve.start()
    ledger = Ledger()
    _post_runs(serve.url, batch, ledger, per_request=per_request)
    serve.kill()
    segment = min((workdir / "store.wal").glob("*.wal"))
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0xFF
    segment.write_bytes(bytes(data))
    serve.start()
    m = scrape(serve.url)
    corrupt = int(total(m, "mast_wal_corrupt_records_total"))
    size_after_start = segment.stat().st_size
    report = _finish_runs(serve, batch, ledger.acked)
    serve.stop()
    report.update({"segment_bytes": len(data), "segment_bytes_after_start": size_after_start, "corrupt_records": corrupt,
                   "runs_per_record": per_request})
    report["held"] = (report["acked"] == runs and report["acked_missing_steps"] <= per_request and corrupt == 1
                      and size_after_start == len(data))
    return report


def foreign_entries(workdir: Path, runs: int = 50) -> dict[str, Any]:
    """A directory and a symlink named like segments, and another file, in the log's folder."""
    batch = make_runs(runs, seed=53)
    serve = ServeProcess(workdir, {"assembly": {"grace_seconds": 0.5}})
    serve.start()
    ledger = Ledger()
    _post_runs(serve.url, batch, ledger)
    serve.kill()
    folder = workdir / "store.wal"
    (folder / "000000000777.wal").mkdir()
    (folder / "backup.wal").symlink_to(workdir / "config.yaml")
    (folder / "README").write_text("not a segment")
    try:
        serve.start()
    except RuntimeError as exc:
        return {"started": False, "error": str(exc).splitlines()[0], "held": False}
    report = _finish_runs(serve, batch, ledger.acked)
    warnings = serve.log().count("not a segment file written by this log")
    serve.stop()
    report.update({"started": True, "foreign_entry_warnings": warnings})
    report["held"] = report["acked_missing_steps"] == 0 and report["acked"] == runs and warnings == 2
    return report


def _late_span(run: SplitRun, n: int) -> Span:
    """A tool span of ``run`` that ended after the run was diagnosed (a new span id each ``n``)."""
    late = Span()
    late.CopyFrom(run.steps[-1])
    late.span_id = (int.from_bytes(late.span_id, "big") ^ (0xA5A5 + n)).to_bytes(8, "big")
    return late


def _post_counting(url: str, bodies: list[bytes]) -> tuple[int, int]:
    """(requests answered 200, spans named rejected in their partial-success answers)."""
    ok = rejected = 0
    with httpx.Client(timeout=30) as client:
        for body in bodies:
            r = client.post(f"{url}/v1/traces", content=body, headers={"Content-Type": PROTOBUF})
            ok += r.status_code == 200
            rejected += rejected_spans(r.content) if r.status_code == 200 and r.content else 0
    return ok, rejected


def _all_have(counts: dict[str, int], runs: list[SplitRun], extra: int) -> bool:
    return all(counts.get(r.trace_id) == r.span_count + extra for r in runs)


def late_spans(workdir: Path, runs: int = 300, per_request: int = 10) -> dict[str, Any]:
    """Late spans of diagnosed runs across a SIGKILL: merged after the restart, or named rejected."""
    batch = make_runs(runs, seed=59)
    serve = ServeProcess(workdir, {"assembly": {"grace_seconds": 3.0}})
    serve.start()
    _post_runs(serve.url, batch, Ledger(), parts=lambda r: [*r.steps, r.root])
    wait_for(lambda: stored_total(serve.url) >= runs and total(scrape(serve.url), "mast_traces_in_flight") == 0, 60, 0.3)
    chunks = [batch[i:i + per_request] for i in range(0, runs, per_request)]
    ok_before, rejected_before = _post_counting(serve.url, [request([_late_span(r, 1) for r in c]) for c in chunks])
    serve.kill()  # within the grace period: no re-diagnosis yet
    serve.start()
    ok_after, rejected_after = _post_counting(serve.url, [request([_late_span(r, 2) for r in c]) for c in chunks])
    wait_for(lambda: total(scrape(serve.url), "mast_traces_in_flight") == 0, 60, 0.3)
    wait_for(lambda: _all_have(diagnosed(serve.url, batch), batch, extra=2), 20, 1.0)
    counts = diagnosed(serve.url, batch)
    serve.stop()
    with_both = sum(_all_have(counts, [r], extra=2) for r in batch)

    # runs diagnosed and past retention before the restart: their late spans are named rejected
    short = ServeProcess(workdir / "short", {"assembly": {"grace_seconds": 0.5, "retention_seconds": 2}})
    short.start()
    old = make_runs(50, seed=61)
    _post_runs(short.url, old, Ledger(), parts=lambda r: [*r.steps, r.root])
    wait_for(lambda: stored_total(short.url) >= len(old), 60, 0.3)
    time.sleep(2.5)  # past retention
    short.kill()
    short.start()
    late_old = [request([_late_span(r, 1) for r in old[i:i + per_request]]) for i in range(0, len(old), per_request)]
    ok_old, rejected_old = _post_counting(short.url, late_old)
    short.stop()
    report = {
        "runs": runs, "late_acked_before_kill": ok_before * per_request - rejected_before,
        "late_acked_after_restart": ok_after * per_request - rejected_after, "stored_with_both_late_spans": with_both,
        "past_retention_late_spans": len(old), "past_retention_named_rejected": rejected_old,
        "past_retention_answered": ok_old,
    }
    report["held"] = (with_both == runs and rejected_before == rejected_after == 0
                      and rejected_old == len(old) and ok_old == len(late_old))
    return report


def evicted(workdir: Path, runs: int = 200) -> dict[str, Any]:
    """Runs evicted under ``max_traces_in_flight`` and revived by their later spans, across a SIGKILL."""
    batch = make_runs(runs, seed=67)
    serve = ServeProcess(workdir, {"assembly": {"grace_seconds": 30.0, "max_traces_in_flight": 30}})
    serve.start()
    acked: dict[str, int] = {}
    with httpx.Client(timeout=30) as client:
        for half in (lambda r: r.steps[:len(r.steps) // 2], lambda r: r.steps[len(r.steps) // 2:]):
            for run in batch:  # one run a request, so a partial success names this run's spans
                spans = half(run)
                r = client.post(f"{serve.url}/v1/traces", content=request(spans), headers={"Content-Type": PROTOBUF})
                if r.status_code == 200:
                    acked[run.trace_id] = acked.get(run.trace_id, 0) + len(spans) - (rejected_spans(r.content) if r.content else 0)
    evictions = int(total(scrape(serve.url), "mast_traces_evicted_total"))
    serve.kill()
    serve.config["assembly"]["grace_seconds"] = 0.5  # no need to wait any more
    serve.config_path.write_text(yaml.safe_dump(serve.config))
    serve.start()
    with httpx.Client(timeout=30) as client:
        for run in batch:
            r = client.post(f"{serve.url}/v1/traces", content=request([run.root]), headers={"Content-Type": PROTOBUF})
            if r.status_code == 200 and not (r.content and rejected_spans(r.content)):
                acked[run.trace_id] = acked.get(run.trace_id, 0) + 1
    wait_for(lambda: total(scrape(serve.url), "mast_traces_in_flight") == 0, 90, 0.5)
    time.sleep(1)
    counts = diagnosed(serve.url, batch)
    serve.stop()
    short = {t: n - counts.get(t, 0) for t, n in acked.items() if counts.get(t, 0) < n}
    report = {"runs": runs, "evictions_before_kill": evictions, "spans_acked": sum(acked.values()),
              "runs_short_of_an_acked_span": len(short), "acked_spans_missing": sum(short.values())}
    report["held"] = evictions > 0 and not short
    return report


def _wal_lines(serve: ServeProcess, level: str) -> int:
    return sum(f" {level} mast_otel.processors.service.wal" in line for line in serve.log().splitlines())


def log_disk_full(workdir: Path, runs: int = 3000, size: str = "1m") -> dict[str, Any] | None:
    """The log alone on a small tmpfs, the default 600 s retention: runs until 30 refusals, then
    how long until requests are taken again, what ``/readyz`` said and how many lines were logged;
    100 runs; runs until the tmpfs is full again; SIGKILL; restart on the full tmpfs: every
    acknowledged run stored, no refused one. ``None`` without tmpfs."""
    disk = workdir / "disk"
    if not can_mount_tmpfs(disk):
        return None
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], check=True)
    try:
        batch = make_runs(runs, seed=71)
        # sweeps 2 s apart: the log, once full, stays refusing long enough to be seen not ready
        serve = ServeProcess(workdir, {"wal": {"directory": str(disk / "wal"), "segment_bytes": 64 * 1024},
                                       "assembly": {"sweep_interval_seconds": 2}})
        serve.start()
        ledger = Ledger()
        ready_while_full = _flood(serve.url, batch, ledger, stop_after_refusals=30)
        errors_while_full = _wal_lines(serve, "ERROR")
        started = time.monotonic()
        wait_for(lambda: _ready(serve.url) == 200, 30, 0.1)
        seconds_to_ready = round(time.monotonic() - started, 1)
        rest = [r for r in batch if r.trace_id not in ledger.acked and r.trace_id not in ledger.refused][:100]
        statuses_after = _post_runs(serve.url, rest, ledger, per_request=1, parts=lambda r: [*r.steps, r.root])
        _flood(serve.url, batch[len(ledger.acked) + len(ledger.refused):], ledger, stop_after_refusals=30)  # full again
        report = {"acked_before_full": len(ledger.acked) - statuses_after.count(200),
                  "ready_while_full": ready_while_full, "error_lines_while_full": errors_while_full,
                  "seconds_until_ready_again": seconds_to_ready, "accepted_after": statuses_after.count(200),
                  "error_lines": _wal_lines(serve, "ERROR"), "cleared_lines": _wal_lines(serve, "WARNING"),
                  "acked": len(ledger.acked)}
        report["refused"] = len(ledger.refused)
        serve.kill()
        return _recovered(serve, batch, ledger, report)
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def log_read_only(workdir: Path, runs: int = 200) -> dict[str, Any] | None:
    """The steps of half the runs logged over several segments; the log's folder made immutable
    (``chattr +i``: no new file, no deletion, root included); their agent spans, so they settle
    and their segments are due for deletion; the folder writable again; the other half; SIGKILL,
    restart: every acknowledged run stored whole. ``None`` where chattr cannot be used."""
    folder = workdir / "wal"
    folder.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        return None
    subprocess.run(["chattr", "-i", str(folder)], check=True)
    batch = make_runs(runs, seed=73)
    first, second = batch[:runs // 2], batch[runs // 2:]
    serve = ServeProcess(workdir, {"wal": {"directory": str(folder), "segment_bytes": 16 * 1024},
                                   "assembly": {"retention_seconds": 0}})
    serve.start()
    ledger = Ledger()
    _post_runs(serve.url, first, ledger, per_request=1)
    segments = len(list(folder.glob("*.wal")))
    try:
        subprocess.run(["chattr", "+i", str(folder)], check=True)
        statuses = _post_runs(serve.url, first, Ledger(), parts=lambda r: [r.root])
        time.sleep(1.5)  # the runs complete and settle; their segments cannot be deleted
        report = {"segments_before": segments, "refused_while_read_only": statuses.count(503),
                  "ready_while_read_only": _ready(serve.url), "error_lines_while_read_only": _wal_lines(serve, "ERROR")}
    finally:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
    wait_for(lambda: _ready(serve.url) == 200, 30, 0.1)
    _post_runs(serve.url, first, Ledger(), parts=lambda r: [r.root], retry_seconds=10)  # those refused above
    statuses = _post_runs(serve.url, second, ledger, per_request=1, parts=lambda r: [*r.steps, r.root])
    report.update({"ready_after": _ready(serve.url), "accepted_after": statuses.count(200),
                   "error_lines": _wal_lines(serve, "ERROR"), "cleared_lines": _wal_lines(serve, "WARNING")})
    serve.kill()
    serve.start()
    wait_for(lambda: total(scrape(serve.url), "mast_traces_in_flight") == 0 and stored_total(serve.url) >= len(ledger.acked), 60, 0.3)
    counts = diagnosed(serve.url, batch)
    serve.stop()
    whole = sum(counts.get(r.trace_id) == r.span_count for r in batch if r.trace_id in ledger.acked)
    report.update({"acked": len(ledger.acked), "acked_stored_whole": whole, "acked_missing_steps": len(ledger.acked) - whole})
    report["held"] = (report["ready_while_read_only"] == 503 and report["error_lines"] == 1 and report["ready_after"] == 200
                      and report["acked_missing_steps"] == 0)
    return report


SCENARIOS = {"restart": restart, "disk_full_injected": disk_full_injected, "disk_full_tmpfs": disk_full_tmpfs,
             "folder_deleted": folder_deleted, "io_error": io_error, "corrupt_record": corrupt_record,
             "foreign_entries": foreign_entries, "late_spans": late_spans, "evicted": evicted,
             "log_disk_full": log_disk_full, "log_read_only": log_read_only}


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
