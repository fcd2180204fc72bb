"""``mast-otel demo`` end to end: real processor, real OTLP export, table equal to the API's data."""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import httpx

from mast_otel.demo import command
from mast_otel.processors.web.summary import decimal, percent, summarize

MODELS = ("sim-flash", "sim-frontier", "sim-open")


def parse_table(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells and cells[0] in MODELS:
            rows[cells[0]] = cells
    return rows


def test_demo_once_from_the_command_line():
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [sys.executable, "-m", "mast_otel.processors.cli", "demo", "--once", "--runs", "3", "--http-port", "0", "--grpc-port", "0"],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = parse_table(proc.stdout)
    assert sorted(rows) == list(MODELS)
    assert all(cells[1] == "3" for cells in rows.values())
    assert "9 of 9 runs diagnosed" in proc.stderr
    assert "http://" not in proc.stdout  # --once: the processor has stopped, so no URLs to visit


def test_demo_table_matches_the_api_while_serving(tmp_path):
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    args = parser.parse_args(["--runs", "6", "--http-port", "0", "--grpc-port", "0", "--interval", "0", "--seed", "3"])
    out, err, stop = io.StringIO(), io.StringIO(), threading.Event()
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("rc", command._demo(args, tmp_path, out, err, stop)))
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while "Web view" not in out.getvalue():
            assert thread.is_alive() and time.monotonic() < deadline, err.getvalue()[-3000:]
            time.sleep(0.1)
        base = re.search(r"Web view\s+(http://\S+?)/\n", out.getvalue()).group(1)
        page = httpx.get(f"{base}/v1/diagnoses", params={"limit": 1000}).json()
        assert page["total"] == 18
        api = [SimpleNamespace(model=d["model"], modes=[m["mode"] for m in d["modes"]], fatal=d["fatal"],
                               outcome=d["outcome"]) for d in page["items"]]
        printed = parse_table(out.getvalue())
        for s in summarize(api):
            assert printed[s.model][1:5] == [str(s.runs), percent(s.success_rate), decimal(s.modes_per_failed_run),
                                             percent(s.fatal_share)], s.model
        metrics = httpx.get(f"{base}/metrics").text
        traces = sum(float(v) for v in re.findall(r'^mast_traces_total\{[^}]*service_name="sre-agent-demo"[^}]*\} (\S+)', metrics, re.M))
        assert traces == 18
        assert httpx.get(f"{base}/").status_code == 200
    finally:
        stop.set()
        thread.join(timeout=60)
    assert result.get("rc") == 0


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_redraws_in_place_only_on_a_terminal():
    log, tty = io.StringIO(), _Terminal()
    for done in range(1, 5):
        command._progress(log, done, 4)
        command._progress(tty, done, 4)
    assert log.getvalue() == "  agent runs [" + "#" * 30 + "] 4/4\n"  # one final line, no carriage returns
    assert tty.getvalue().count("\r") == 4 and tty.getvalue().endswith("4/4\n")
