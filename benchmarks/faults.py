"""Fault scenarios against a real ``mast-otel serve`` subprocess, each with exact accounting.

    .venv/bin/python benchmarks/faults.py [SCENARIO ...] [--runs N] [--no-write]

Scenarios (all by default):

- ``kill``: SIGKILL mid-stream, then restart on the same store and write-ahead log.
  Diagnoses and outcomes made before the kill persist; the runs acknowledged but not yet
  diagnosed are replayed from the log and diagnosed after the restart (stored == acked,
  exactly, nothing counted lost). A graceful SIGTERM afterwards flushes: nothing is lost.
- ``exporter_down``: the OTLP re-export backend refuses connections. Ingest and diagnosis go
  on; every span is either exported or counted in ``mast_export_dropped_spans_total`` (the
  queue is bounded); when the backend comes up, export resumes.
- ``disk_full``: mid-stream, the running process may no longer grow its files
  (``RLIMIT_FSIZE`` set with ``prlimit``: what a full disk looks like to SQLite; as root, a
  read-only file mode would not stop writes), with the write-ahead log off (``durability.py``
  covers a full disk under the log). The store error is logged once and counted in
  ``mast_store_errors_total``; ingest and the alerting metrics stay exact; once space comes
  back, diagnoses are stored again.
- ``judge_down``: the LLM judge's provider refuses connections. Rule diagnoses are identical
  to a run without a judge; judge failures are counted in ``mast_judge_requests_total``.

Results go to docs/reliability.md between the ``faults`` markers. ``tests/reliability``
runs the same functions with fewer runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import httpx
from docblock import write_doc_block
from soak import DOC, ReplyServer, RunFactory, ServeProcess, free_port, post_runs, scrape, stored_total, total, wait_for


def _outcome(url: str, trace_id: str, outcome: str) -> int:
    return httpx.post(f"{url}/v1/outcomes", json={"trace_id": trace_id, "outcome": outcome, "score": 0.5}, timeout=10).status_code


def kill(workdir: Path, runs: int = 40, factory: RunFactory | None = None) -> dict[str, Any]:
    factory = factory or RunFactory()
    serve = ServeProcess(workdir, {"assembly": {"grace_seconds": 3.0}})
    serve.start()
    before = post_runs(serve.url, factory, runs)
    diagnosed = wait_for(lambda: stored_total(serve.url) >= runs, 30)
    outcomes = {t: ("failure" if i % 2 else "success") for i, t in enumerate(sorted(before.traces_acked)[: runs // 2])}
    for trace_id, outcome in outcomes.items():
        _outcome(serve.url, trace_id, outcome)
    in_flight = post_runs(serve.url, factory, runs)  # acknowledged, then killed within the grace period
    serve.kill()
    acked = before.traces_acked | in_flight.traces_acked

    serve.start()
    wait_for(lambda: stored_total(serve.url) >= len(acked), 30)  # the replayed runs complete after their grace period
    m = scrape(serve.url)
    stored = stored_total(serve.url)
    lost = int(total(m, "mast_traces_lost_total", reason="restart"))
    kept = [httpx.get(f"{serve.url}/v1/diagnoses/{t}", timeout=10).json() for t in outcomes]
    outcomes_kept = sum(d.get("outcome") == outcomes[d["trace_id"]] for d in kept)
    before_kept = sum(httpx.get(f"{serve.url}/v1/diagnoses/{t}", timeout=10).status_code == 200 for t in before.traces_acked)

    after = post_runs(serve.url, factory, runs)
    serve.stop()  # SIGTERM: flush everything buffered
    serve.start()
    m2 = scrape(serve.url)
    stored_after_graceful = stored_total(serve.url)
    lost_after_graceful = int(total(m2, "mast_traces_lost_total"))
    serve.stop()
    return {
        "acked_before_kill": len(acked), "diagnosed_before_kill": len(before.traces_acked) if diagnosed else None,
        "stored_after_restart": stored, "replayed_spans": int(total(m, "mast_wal_replayed_spans_total")),
        "lost_reported": lost, "silently_missing": len(acked) - stored - lost,
        "pre_kill_diagnoses_kept": before_kept, "outcomes_posted": len(outcomes), "outcomes_kept": outcomes_kept,
        "acked_then_sigterm": len(after.traces_acked), "stored_after_graceful": stored_after_graceful,
        "lost_after_graceful": lost_after_graceful,
        "held": stored == len(acked) and lost == 0 and before_kept == runs and outcomes_kept == len(outcomes)
        and stored_after_graceful == stored + len(after.traces_acked) and lost_after_graceful == 0,
    }


def exporter_down(workdir: Path, runs: int = 200, factory: RunFactory | None = None) -> dict[str, Any]:
    factory = factory or RunFactory()
    port = free_port()
    exporter = {"endpoint": f"http://127.0.0.1:{port}/v1/traces", "queue_size": 4, "timeout_seconds": 1.0}
    with ServeProcess(workdir, {"exporters": {"otlp": [exporter]}}) as serve:
        down = post_runs(serve.url, factory, runs)

        def settled() -> bool:
            m = scrape(serve.url)
            return total(m, "mast_exported_spans_total") + total(m, "mast_export_dropped_spans_total") >= total(m, "mast_spans_received_total")

        drained = wait_for(settled, 60, 0.5)
        m = scrape(serve.url)
        result: dict[str, Any] = {
            "spans_acked": down.spans_acked, "spans_received": int(total(m, "mast_spans_received_total")),
            "exported_while_down": int(total(m, "mast_exported_spans_total")),
            "dropped_while_down": {r: int(total(m, "mast_export_dropped_spans_total", reason=r)) for r in ("queue_full", "export_failed")},
            "traces_acked": len(down.traces_acked), "traces_diagnosed": int(total(m, "mast_traces_total")),
            "rss_mb": round(serve.rss() / 2**20, 1), "drained": drained,
        }
        with ReplyServer(b"", "application/x-protobuf", port):  # the backend comes up
            up = post_runs(serve.url, factory, max(4, runs // 10))
            resumed = wait_for(lambda: total(scrape(serve.url), "mast_exported_spans_total") > 0 and settled(), 30, 0.5)
            m = scrape(serve.url)
    dropped = sum(result["dropped_while_down"].values())
    exported, dropped_total = int(total(m, "mast_exported_spans_total")), int(total(m, "mast_export_dropped_spans_total"))
    result.update({
        "exported_after_recovery": exported, "dropped_total": dropped_total, "resumed": resumed,
        "held": drained and resumed and dropped > 0 and result["exported_while_down"] + dropped == result["spans_received"]
        == down.spans_acked and result["traces_diagnosed"] == result["traces_acked"]
        and exported + dropped_total == down.spans_acked + up.spans_acked == int(total(m, "mast_spans_received_total")),
    })
    return result


def disk_full(workdir: Path, runs: int = 200, factory: RunFactory | None = None) -> dict[str, Any]:
    """The disk fills up under a running processor, then space comes back."""
    import resource

    factory = factory or RunFactory()
    with ServeProcess(workdir, {"log_level": "WARNING", "wal": {"enabled": False}}) as serve:

        def settled(traces: int) -> bool:
            m = scrape(serve.url)
            return total(m, "mast_traces_in_flight") == 0 and total(m, "mast_traces_total") >= traces

        before = post_runs(serve.url, factory, runs)
        wait_for(lambda: stored_total(serve.url) >= runs, 30)
        # The disk is full: no file of the process may grow past its current size.
        used = max(p.stat().st_size for p in workdir.glob("store.sqlite*"))
        resource.prlimit(serve.pid, resource.RLIMIT_FSIZE, (used, resource.RLIM_INFINITY))
        full = post_runs(serve.url, factory, runs * 3)
        acked = len(before.traces_acked | full.traces_acked)
        wait_for(lambda: settled(acked), 60, 0.5)
        m = scrape(serve.url)
        stored_while_full = stored_total(serve.url)
        healthy = httpx.get(f"{serve.url}/healthz", timeout=5).status_code == 200
        resource.prlimit(serve.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        after = post_runs(serve.url, factory, runs)
        wait_for(lambda: settled(acked + runs), 60, 0.5)
        stored_after = stored_total(serve.url)
        m_after = scrape(serve.url)
    log = serve.log()
    store_errors = [line for line in log.splitlines() if "diagnosis store" in line and "ERROR" in line]
    spans = before.spans_acked + full.spans_acked + after.spans_acked
    result = {
        "spans_acked": spans, "spans_received": int(total(m_after, "mast_spans_received_total")),
        "traces_acked": acked + len(after.traces_acked), "traces_total": int(total(m_after, "mast_traces_total")),
        "traces_total_while_full": int(total(m, "mast_traces_total")), "stored_before_full": runs,
        "stored_while_full": stored_while_full, "stored_after_space_returned": stored_after,
        "failure_mode_traces": int(total(m_after, "mast_failure_mode_traces_total")),
        "store_errors": {"save": int(total(m_after, "mast_store_errors_total", operation="save"))},
        "store_error_log_lines": len(store_errors), "healthy_while_full": healthy, "log_tracebacks": log.count("Traceback"),
    }
    result["held"] = (result["spans_received"] == spans and result["traces_total"] == result["traces_acked"]
                      and result["traces_total_while_full"] == acked and stored_while_full < acked
                      and stored_after > stored_while_full and result["store_errors"]["save"] > 0
                      and len(store_errors) == 1 and healthy and result["failure_mode_traces"] > 0)
    return result


def _rule_modes(m: dict) -> dict[str, int]:
    modes: dict[str, int] = {}
    for (name, labels), value in m.items():
        labels = dict(labels)
        if name == "mast_failure_mode_traces_total" and labels["source"] == "rules":
            modes[labels["mode"]] = modes.get(labels["mode"], 0) + int(value)
    return modes


def judge_down(workdir: Path, runs: int = 40, seed: int = 11) -> dict[str, Any]:
    judge = {"model": "openai/gpt-4o-mini", "api_base": f"http://127.0.0.1:{free_port()}/v1", "api_key": "sk-not-a-real-key",
             "sample_rate": 1.0, "max_retries": 0, "timeout_seconds": 2.0, "retry_backoff_seconds": 0.0}
    observed = {}
    for name, overrides in (("baseline", {}), ("judge_down", {"judge": judge})):
        with ServeProcess(workdir / name, overrides) as serve:
            sent = post_runs(serve.url, RunFactory(seed=seed), runs, runs_per_request=1)
            wait_for(lambda: stored_total(serve.url) >= len(sent.traces_acked), 60, 0.5)
            if name == "judge_down":
                wait_for(lambda: total(scrape(serve.url), "mast_judge_requests_total") > 0, 60, 0.5)
            m = scrape(serve.url)
            observed[name] = {
                "traces_total": int(total(m, "mast_traces_total")), "stored": stored_total(serve.url),
                "rule_modes": _rule_modes(m),
                "judge_requests": {dict(ls)["status"]: int(v) for (n, ls), v in m.items() if n == "mast_judge_requests_total"},
            }
    base, down = observed["baseline"], observed["judge_down"]
    failed = sum(v for status, v in down["judge_requests"].items() if status not in ("ok", "success"))
    return {**observed, "judge_failures": failed,
            "held": base["rule_modes"] == down["rule_modes"] and bool(base["rule_modes"]) and down["traces_total"] == runs
            and down["stored"] == runs and failed > 0}


SCENARIOS: dict[str, Callable[..., dict[str, Any]]] = {"kill": kill, "exporter_down": exporter_down, "disk_full": disk_full, "judge_down": judge_down}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help=f"any of {', '.join(SCENARIOS)} (default: all)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios {sorted(unknown)}; choose from {', '.join(SCENARIOS)}")
    report = {}
    with tempfile.TemporaryDirectory(prefix="mast-faults-") as tmp:
        for name in args.scenarios or list(SCENARIOS):
            started = time.monotonic()
            report[name] = SCENARIOS[name](Path(tmp) / name)
            report[name]["seconds"] = round(time.monotonic() - started, 1)
            print(name, json.dumps(report[name]), flush=True)
    if not args.no_write:
        write_doc_block("faults", "```json\n" + json.dumps(report, indent=2) + "\n```", DOC)
    failed = [name for name, r in report.items() if not r["held"]]
    for name in failed:
        print("FAILED:", name, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
