"""Replicas started by hand on one machine, without Docker, as docs/deployment.md describes them:
N ``mast-otel serve`` processes from one working folder, one PostgreSQL store
(``MAST_OTEL_STORE__URL``), each with its own log folder (``MAST_OTEL_WAL__DIRECTORY``).

Each says at start which store (the password masked) and which log folder it uses; every run
is visible from every replica and nothing lands in the working folder. Three started at the
same moment on one log folder (the default one, with ``store.url`` set: ``mast-otel.wal`` in
the working folder) leave one replica ready and two that exit with the one-line "in use" error.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.service.support import emit_run, provider_for, wait_for

MAST_OTEL = Path(sys.executable).with_name("mast-otel")
PASSWORD = "s3cret-pw"
WAIT = 90.0  # seconds a loaded machine may take


def _with_password(url: str) -> str:
    """The test server trusts every local connection; a password in the URL checks the masking."""
    return re.sub(r"://([^:@/]+)@", rf"://\1:{PASSWORD}@", url)


class Serve:
    """One ``mast-otel serve`` on free ports, started in ``cwd`` with ``env`` added."""

    def __init__(self, cwd: Path, name: str, env: dict[str, str]) -> None:
        self.out, self.err = cwd.parent / f"{name}.out", cwd.parent / f"{name}.err"
        full = {k: v for k, v in os.environ.items() if not k.startswith("MAST_OTEL_")}
        self.proc = subprocess.Popen(
            [str(MAST_OTEL), "serve", "--http-port", "0", "--grpc-port", "0",
             "--config", str(cwd.parent / "fast.yaml")],
            cwd=cwd, env={**full, **env}, stdout=open(self.out, "w"), stderr=open(self.err, "w"))

    def ready_line(self) -> str | None:
        return next((line for line in self.out.read_text().splitlines() if "ready: OTLP/HTTP" in line), None)

    @property
    def url(self) -> str:
        return re.search(r"API (http://\S+),", self.ready_line()).group(1)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()


def _fast_config(folder: Path) -> None:
    (folder / "fast.yaml").write_text(
        "assembly: {grace_seconds: 0.2, sweep_interval_seconds: 0.05}\nwal: {fsync: interval}\n")


def test_replicas_by_hand_share_one_store_each_on_its_own_log_folder(postgres, tmp_path):
    url = _with_password(postgres.create_database("mast_by_hand"))
    work = tmp_path / "work"
    work.mkdir()
    _fast_config(tmp_path)
    logs = tmp_path / "logs"
    replicas = [Serve(work, f"replica-{i}", {"MAST_OTEL_STORE__URL": url,
                                             "MAST_OTEL_WAL__DIRECTORY": str(logs / f"replica-{i}.wal")})
                for i in range(3)]
    try:
        for r in replicas:
            wait_for(lambda: r.ready_line() or (r.proc.poll() is not None and _exited(r)), timeout=WAIT, interval=0.1)
        masked = re.sub(rf":{PASSWORD}@", ":***@", url)
        for i, r in enumerate(replicas):
            assert r.ready_line().endswith(f"; store {masked}, log folder {logs / f'replica-{i}.wal'}"), r.ready_line()
        runs = []
        for r in replicas:
            provider = provider_for(OTLPSpanExporter(endpoint=f"{r.url}/v1/traces"))
            runs.append(emit_run(provider)[0])
            provider.shutdown()
        for r in replicas:  # every run, whichever replica diagnosed it
            wait_for(lambda: {d["trace_id"] for d in httpx.get(f"{r.url}/v1/diagnoses").json()["items"]} == set(runs),
                     timeout=WAIT, interval=0.2)
    finally:
        codes = [r.stop() for r in replicas]
    assert codes == [0, 0, 0]
    output = "".join(r.out.read_text() + r.err.read_text() for r in replicas)
    assert PASSWORD not in output
    assert list(work.iterdir()) == []  # no SQLite file, no log in the shared working folder
    assert sorted(p.name for p in logs.iterdir()) == [f"replica-{i}.wal" for i in range(3)]


def _exited(r: Serve):
    raise AssertionError(f"serve exited {r.proc.returncode}:\n{r.out.read_text()}\n{r.err.read_text()}")


def test_replicas_started_together_on_one_log_folder_leave_one_ready_and_the_others_name_it(postgres, tmp_path):
    """Three at the same moment from one working folder with store.url and no log folder set
    (so all want ``mast-otel.wal`` there), three times over: one ready, two refused."""
    url = postgres.create_database("mast_one_folder")
    for attempt in range(3):
        work = tmp_path / f"attempt-{attempt}" / "work"
        work.mkdir(parents=True)
        _fast_config(work.parent)
        racers = [Serve(work, f"racer-{i}", {"MAST_OTEL_STORE__URL": url}) for i in range(3)]
        try:
            wait_for(lambda: sum(r.proc.poll() is not None for r in racers) >= 2, timeout=WAIT, interval=0.1)
            losers = [r for r in racers if r.proc.poll() is not None]
            [winner] = [r for r in racers if r.proc.poll() is None]
            for r in losers:
                lines = r.err.read_text().splitlines()
                assert r.proc.returncode == 2 and len(lines) == 1, (r.proc.returncode, r.err.read_text())
                assert re.search(rf"the write-ahead log ({re.escape(str(work))}/)?mast-otel\.wal is in use by another process",
                                 lines[0]), lines
            wait_for(winner.ready_line, timeout=WAIT, interval=0.1)
            time.sleep(1.0)  # what a loser removed would show by now
            assert httpx.get(f"{winner.url}/readyz").status_code == 200, winner.err.read_text()
            provider = provider_for(OTLPSpanExporter(endpoint=f"{winner.url}/v1/traces"))
            trace_id = emit_run(provider)[0]
            provider.shutdown()
            wait_for(lambda: httpx.get(f"{winner.url}/v1/diagnoses/{trace_id}").status_code == 200, timeout=WAIT)
            assert (work / "mast-otel.wal").is_dir() and list((work / "mast-otel.wal").iterdir())
        finally:
            for r in racers:
                r.stop()
        assert winner.proc.returncode == 0, winner.err.read_text()
