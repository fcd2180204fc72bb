"""Local Prometheus and Alertmanager for ``mast-otel demo --prometheus``, when they are installed.

Both run as child processes on loopback with their data in the demo's temporary folder.
Prometheus scrapes the in-process processor and loads the project's alert and recording
rules from ``deploy/prometheus/rules`` (present in a source checkout).
"""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

RULES_DIR = Path(__file__).resolve().parents[1] / "deploy" / "prometheus" / "rules"
SCRAPE_SECONDS = 5
READY_TIMEOUT_SECONDS = 20


def first_page(base: str, paths: tuple[str, ...]) -> str | None:
    """``base`` + the first of ``paths`` that answers 200 (packagings differ in which UI pages they ship)."""
    for path in paths:
        try:
            with urllib.request.urlopen(base + path, timeout=2) as response:
                if response.status == 200:
                    return base + path
        except OSError:
            continue
    return None


@dataclass
class LocalStack:
    """Started Prometheus/Alertmanager processes and their URLs; ``stop()`` ends them."""

    urls: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _procs: list[subprocess.Popen] = field(default_factory=list)

    def stop(self) -> None:
        for proc in self._procs:
            proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        self._procs.clear()


def _wait_ready(url: str, proc: subprocess.Popen) -> bool:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def _spawn(stack: LocalStack, name: str, argv: list[str], ready_url: str, log: Path) -> bool:
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    stack._procs.append(proc)
    if _wait_ready(ready_url, proc):
        return True
    stack.notes.append(f"{name} did not become ready; see {log}")
    return False


@dataclass(frozen=True)
class StackPorts:
    """Where Prometheus and Alertmanager listen (chosen before anything starts)."""

    prometheus: int
    alertmanager: int


def start_local_stack(processor_host_port: str, workdir: Path, ports: StackPorts) -> LocalStack:
    """Start Alertmanager then Prometheus (whichever is installed) scraping ``processor_host_port``."""
    stack = LocalStack()
    alertmanager = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
    prometheus = shutil.which("prometheus")
    am_target = None
    if alertmanager:
        config = workdir / "alertmanager.yml"
        config.write_text("route:\n  receiver: demo\nreceivers:\n  - name: demo\n")
        url = f"http://127.0.0.1:{ports.alertmanager}"
        if _spawn(stack, "Alertmanager", [
            alertmanager, f"--config.file={config}", f"--storage.path={workdir / 'alertmanager-data'}",
            f"--web.listen-address=127.0.0.1:{ports.alertmanager}", "--cluster.listen-address=",
        ], f"{url}/-/ready", workdir / "alertmanager.log"):
            # Debian's package ships no web UI (its root page says so); the API works everywhere.
            ui = first_page(url, ("/script.js",))
            stack.urls["Alertmanager"] = f"{url}/#/alerts" if ui else f"{url}/api/v2/alerts"
            am_target = f"127.0.0.1:{ports.alertmanager}"
    else:
        stack.notes.append("Alertmanager is not installed (Debian: apt-get install prometheus-alertmanager)")
    if not prometheus:
        stack.notes.append("Prometheus is not installed (Debian: apt-get install prometheus)")
        return stack
    rules = sorted(RULES_DIR.glob("*.yml")) if RULES_DIR.is_dir() else []
    if not rules:
        stack.notes.append("alert rules not found (they ship in the source checkout's deploy/prometheus/rules)")
    docs = RULES_DIR.parents[2] / "docs"
    labels = {"mast_processor_url": f"http://{processor_host_port}"}
    if docs.is_dir():
        labels["mast_runbook_url"] = docs.as_uri()
    lines = [
        "global:", f"  scrape_interval: {SCRAPE_SECONDS}s", f"  evaluation_interval: {SCRAPE_SECONDS}s",
        "  external_labels:", *(f"    {k}: {v!r}" for k, v in labels.items()),
        f"rule_files: [{', '.join(repr(str(r)) for r in rules)}]",
        "scrape_configs:", "  - job_name: mast-otel-processor", "    static_configs:",
        f"      - targets: ['{processor_host_port}']",
    ]
    if am_target:
        lines += ["alerting:", "  alertmanagers:", "    - static_configs:", f"        - targets: ['{am_target}']"]
    config = workdir / "prometheus.yml"
    config.write_text("\n".join(lines) + "\n")
    url = f"http://127.0.0.1:{ports.prometheus}"
    if _spawn(stack, "Prometheus", [
        prometheus, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'prometheus-data'}",
        f"--web.listen-address=127.0.0.1:{ports.prometheus}",
    ], f"{url}/-/ready", workdir / "prometheus.log"):
        # Upstream's React UI serves /alerts; Debian's build has only the classic pages.
        stack.urls["Prometheus"] = first_page(url, ("/alerts", "/classic/alerts")) or url
    return stack
