"""Soak: many concurrent OTLP/HTTP exporters against a real ``mast-otel serve`` subprocess.

    .venv/bin/python benchmarks/soak.py [--overload-seconds 60] [--recovery-seconds 30]
        [--senders 16] [--budget-mb 8] [--no-write]

Phase 1 (overload): ``--senders`` threads post encoded agent runs back to back, faster than
one processor process can diagnose them, honouring ``Retry-After`` on 429/503 like the
OpenTelemetry exporters do. Phase 2 (recovery): one sender at a gentle rate. Then the
processor drains and the counts are reconciled exactly:

- spans the senders were told were accepted (spans in each 2xx request minus its
  ``partial_success.rejected_spans``) == ``mast_spans_received_total`` +
  ``mast_duplicate_spans_total``: spans the assembler dropped (per-trace caps, late) are in
  ``rejected_spans`` like the decoder's rejections;
- traces acknowledged == ``mast_traces_total`` == the store's ``/v1/diagnoses`` total;
- nothing is left in flight.

``--hostile [PROFILE ...]`` runs the hostile profiles instead, each against a fresh process
with a 32 MB budget while a well-behaved sender keeps posting (the hostile senders post each
request once, without retrying): ``long_ids`` (400 requests of about 4.7 MB of 200,000-character
ids: whole runs and runs that never end with long conversation and tool-call ids, and parts of
runs that never end with such an id in every value that becomes a key), ``stalled_grpc`` (16 gRPC
streams that send the headers and 10 bytes of a declared 1 MB message, then stall, beside a
gRPC exporter), ``declared_size`` (64 HTTP requests declaring 16 MiB bodies and sending one
byte) and ``dead_reexport`` (a re-export backend that accepts and never answers, 200 runs of
about 4 MB). Each holds when RSS stays in the envelope below and the well-behaved sender is
served; results go between the ``hostile`` markers.

RSS is sampled from ``/proc`` throughout; it must stay within the idle RSS plus twice the
configured buffer budget (in-flight buffers up to 1.25x the budget before forced eviction,
retained runs up to 1x) plus ``OVERHEAD_MB`` of allocator slack. Results go to
docs/reliability.md between the ``soak`` markers.

This module is also the harness the fault scenarios (``faults.py``) and
``tests/reliability`` use: the workload (``RunFactory``), the subprocess (``ServeProcess``),
the senders (``Sender``) and the metric scraper (``scrape``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from docblock import write_doc_block
import httpx
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reliability.md"
OVERHEAD_MB = 64  # allocator slack and SQLite page cache allowed above idle RSS + 2x budget
PROTOBUF = "application/x-protobuf"


# --- workload --------------------------------------------------------------------------------
def _emit_templates(count: int, capture_content: bool, secret: str | None, seed: int) -> list[tuple[bytes, bytes, int]]:
    """``count`` agent runs emitted by mast-otel's own instrumentation into memory, each as
    (serialized ExportTraceServiceRequest, its trace id bytes, span count)."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from mast_otel.instrumentation import agent_run, configure, tool_call
    from mast_otel.wire import attributes as A

    rng = random.Random(seed)
    provider = TracerProvider(resource=Resource.create({"service.name": "soak-sre-agent"}))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    configure(tracer_provider=provider, capture_content=capture_content)
    tracer = provider.get_tracer("mast-otel-soak")
    models = ("gpt-4o", "claude-sonnet-4", "llama-3.1-70b")
    tools = ("kubectl_get_pods", "kubectl_logs", "prometheus_query", "kubectl_describe")
    templates = []
    try:
        for _ in range(count):
            memory.clear()
            model = rng.choice(models)
            steps = rng.randint(2, 8)
            with agent_run("sre-triage", max_steps=10, task=secret or "why is checkout failing") as run:
                for step in range(steps):
                    with tracer.start_as_current_span(f"chat {model}", attributes={
                        A.GEN_AI_OPERATION_NAME: A.OP_CHAT, A.GEN_AI_REQUEST_MODEL: model, A.GEN_AI_RESPONSE_MODEL: model,
                        A.GEN_AI_PROVIDER_NAME: "openai", A.GEN_AI_USAGE_INPUT_TOKENS: 400 + 50 * step,
                        A.GEN_AI_USAGE_OUTPUT_TOKENS: 60, A.MAST_STEP_INDEX: run.next_step(),
                        A.MAST_LLM_INPUT_MESSAGE_COUNT: 2 + 2 * step,
                        **({A.GEN_AI_INPUT_MESSAGES: json.dumps([{"role": "user", "parts": [{"type": "text", "content": secret}]}])}
                           if capture_content and secret else {}),
                    }):
                        pass
                    name = rng.choice(tools) if rng.random() < 0.7 else tools[0]  # some repetition
                    with tool_call(name, kind="read", arguments={"namespace": "shop", "secret": secret or "-"}) as call:
                        call.set_result({"pods": step, "note": secret or "ok"})
                verified = rng.random() < 0.5
                if verified:
                    with tool_call("check_slo", kind="verify") as check:
                        check.set_verification(rng.random() < 0.7)
                run.set_final_answer(secret or "restart the payment pod")
                run.set_claimed_success(True)
            spans = memory.get_finished_spans()
            body = encode_spans(spans).SerializeToString()
            trace_id = spans[0].context.trace_id.to_bytes(16, "big")
            templates.append((body, trace_id, len(spans)))
    finally:
        configure(tracer_provider=None, capture_content=None)
    return templates


class RunFactory:
    """Fresh agent runs on demand: templates from the real instrumentation, with new trace ids.

    The trace id's 16 bytes appear only as trace ids in a serialized request, so replacing
    them gives a new run for the cost of a byte copy (senders must outpace the processor).
    """

    def __init__(self, templates: int = 32, *, capture_content: bool = False, secret: str | None = None, seed: int = 7) -> None:
        self._templates = _emit_templates(templates, capture_content, secret, seed)
        self._lock = threading.Lock()
        self._rng = random.Random(seed)

    def run(self) -> tuple[bytes, str, int]:
        """(request body holding one run, its trace id hex, span count)."""
        with self._lock:
            body, old, spans = self._rng.choice(self._templates)
            new = self._rng.randbytes(16)
        return body.replace(old, new), new.hex(), spans

    def batch(self, runs: int) -> tuple[bytes, list[str], int]:
        """One request holding ``runs`` runs (concatenated requests are one request)."""
        parts = [self.run() for _ in range(runs)]
        return b"".join(p[0] for p in parts), [p[1] for p in parts], sum(p[2] for p in parts)


# --- the processor as a subprocess ----------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class ServeProcess:
    """``mast-otel serve`` with a generated YAML config, on free loopback ports.

    ``overrides`` are merged into the config sections (``{"assembly": {...}}``). The log
    goes to ``workdir/serve.log``; restart with the same object to reuse the store.
    """

    def __init__(self, workdir: Path, overrides: dict[str, dict] | None = None, env: dict[str, str] | None = None,
                 file_size_limit: int | None = None) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.http_port = free_port()
        self.grpc_port = free_port()
        config: dict[str, dict] = {
            "receiver": {"host": "127.0.0.1", "http_port": self.http_port, "grpc_port": self.grpc_port, "retry_after_seconds": 1},
            "assembly": {"grace_seconds": 0.5, "sweep_interval_seconds": 0.2},
            "store": {"path": str(self.workdir / "store.sqlite")},
        }
        for section, values in (overrides or {}).items():
            if isinstance(values, dict):
                config.setdefault(section, {}).update(values)
            else:
                config[section] = values
        self.config = config
        self.config_path = self.workdir / "config.yaml"
        self.config_path.write_text(yaml.safe_dump(config))
        self.log_path = self.workdir / "serve.log"
        self.env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})}
        self.file_size_limit = file_size_limit  # RLIMIT_FSIZE: writes past it fail as on a full disk
        self.proc: subprocess.Popen | None = None
        self.url = f"http://127.0.0.1:{self.http_port}"
        # a script may stand in (fault injection); MAST_SOAK_SERVE_PYTHON runs another build's
        # interpreter (a checkout's venv), so the reliability tests can be tried against an older commit
        self.launcher = [os.environ.get("MAST_SOAK_SERVE_PYTHON") or sys.executable, "-m", "mast_otel.processors.cli"]

    def start(self, timeout: float = 60.0) -> ServeProcess:
        log = open(self.log_path, "ab")
        command = [*self.launcher, "serve", "--config", str(self.config_path)]
        self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.workdir,
                                     preexec_fn=self._limit_file_size if self.file_size_limit else None)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mast-otel serve exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"mast-otel serve was not ready within {timeout}s:\n{self.log()[-3000:]}")

    def _limit_file_size(self) -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_size_limit, self.file_size_limit))

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss(self) -> int:
        return rss_bytes(self.pid)

    def kill(self) -> None:
        """SIGKILL: no flush, no goodbye."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM and wait: the graceful path (flush buffered runs)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ReplyServer:
    """A loopback HTTP server answering every POST with one fixed reply and keeping the bodies:
    an OTLP backend for the re-exporter, an OpenAI-compatible endpoint for the judge."""

    def __init__(self, reply: bytes, content_type: str, port: int = 0) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        bodies: list[bytes] = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                bodies.append(self.rfile.read(int(self.headers.get("content-length", 0))))
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.bodies = bodies
        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self._server.server_port

    def __enter__(self) -> ReplyServer:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def scrape(url: str, headers: dict[str, str] | None = None) -> dict[tuple[str, tuple], float]:
    """``/metrics`` as {(sample name, sorted label items): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    text = httpx.get(f"{url}/metrics", headers=headers, timeout=10).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def total(samples: dict[tuple[str, tuple], float], name: str, **labels: str) -> float:
    """Sum of ``name`` over every label set matching ``labels``."""
    return sum(v for (n, ls), v in samples.items() if n == name and all(dict(ls).get(k) == w for k, w in labels.items()))


def stored_total(url: str, headers: dict[str, str] | None = None) -> int:
    return httpx.get(f"{url}/v1/diagnoses", params={"limit": 1}, headers=headers, timeout=30).json()["total"]


# --- senders ---------------------------------------------------------------------------------
@dataclass
class Tally:
    """What senders were told; shared by all sender threads (guarded by ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    spans_acked: int = 0
    spans_rejected: int = 0  # partial_success.rejected_spans
    traces_acked: set[str] = field(default_factory=set)
    gave_up_spans: int = 0  # still refused when the phase ended: never acknowledged
    latencies: list[float] = field(default_factory=list)
    retry_after_seen: int = 0
    errors: Counter = field(default_factory=Counter)
    started: float = field(default_factory=time.monotonic)
    last_refusal: float | None = None  # seconds after ``started``

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies) or [0.0]
        return {
            "requests": self.requests, "statuses": dict(self.statuses), "spans_acked": self.spans_acked,
            "spans_rejected": self.spans_rejected, "traces_acked": len(self.traces_acked),
            "gave_up_spans": self.gave_up_spans, "retry_after_seen": self.retry_after_seen,
            "errors": dict(self.errors), "p50_ms": round(1000 * lat[len(lat) // 2], 1),
            "p99_ms": round(1000 * lat[int(len(lat) * 0.99)], 1),
            "last_refusal_s": None if self.last_refusal is None else round(self.last_refusal, 2),
        }


def rejected_spans(body: bytes) -> int:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    return ExportTraceServiceResponse.FromString(body).partial_success.rejected_spans


class Sender(threading.Thread):
    """Posts batches of runs until ``stop`` is set; retries a refused batch after Retry-After.

    A batch is counted as acknowledged only on a 2xx answer; a batch still unacknowledged when
    ``stop`` is set is given up (counted in ``gave_up_spans``), as an exporter shutting down
    would drop it.
    """

    def __init__(self, url: str, factory: RunFactory, tally: Tally, stop: threading.Event, *,
                 runs_per_request: int = 4, pause: float = 0.0, headers: dict[str, str] | None = None,
                 max_retry_sleep: float = 2.0) -> None:
        super().__init__(daemon=True)
        self.url, self.factory, self.tally, self.stop_event = f"{url}/v1/traces", factory, tally, stop
        self.runs_per_request, self.pause, self.max_retry_sleep = runs_per_request, pause, max_retry_sleep
        self.headers = {"Content-Type": PROTOBUF, **(headers or {})}

    def run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.stop_event.is_set():
                body, trace_ids, spans = self.factory.batch(self.runs_per_request)
                self._deliver(client, body, trace_ids, spans)
                if self.pause:
                    self.stop_event.wait(self.pause)

    def _deliver(self, client: httpx.Client, body: bytes, trace_ids: list[str], spans: int) -> None:
        t = self.tally
        while True:
            started = time.perf_counter()
            try:
                response = client.post(self.url, content=body, headers=self.headers)
            except httpx.HTTPError as exc:
                with t.lock:
                    t.errors[type(exc).__name__] += 1
                if self.stop_event.wait(0.5):
                    break
                continue
            elapsed = time.perf_counter() - started
            with t.lock:
                t.requests += 1
                t.statuses[response.status_code] += 1
                t.latencies.append(elapsed)
            if response.is_success:
                rejected = rejected_spans(response.content)
                with t.lock:
                    t.spans_acked += spans - rejected
                    t.spans_rejected += rejected
                    t.traces_acked.update(trace_ids)
                return
            retry_after = response.headers.get("retry-after")
            if response.status_code not in (429, 503):
                with t.lock:
                    t.errors[f"http_{response.status_code}"] += 1
                return
            with t.lock:
                t.retry_after_seen += retry_after is not None
                t.last_refusal = time.monotonic() - t.started
            if self.stop_event.wait(min(float(retry_after or 1), self.max_retry_sleep)):
                break
        with t.lock:
            t.gave_up_spans += spans


def post_runs(url: str, factory: RunFactory, runs: int, *, runs_per_request: int = 4,
              headers: dict[str, str] | None = None, tally: Tally | None = None) -> Tally:
    """Send ``runs`` runs from this thread, retrying refusals, and return what the sender was told."""
    tally = tally or Tally()
    sender = Sender(url, factory, tally, threading.Event(), runs_per_request=runs_per_request, headers=headers)
    with httpx.Client(timeout=30) as client:
        for start in range(0, runs, runs_per_request):
            sender._deliver(client, *factory.batch(min(runs_per_request, runs - start)))
    return tally


class RSSSampler(threading.Thread):
    def __init__(self, pid: int, interval: float = 0.1) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.samples: list[int] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            try:
                self.samples.append(rss_bytes(self.pid))
            except OSError:
                return
            self.halt.wait(self.interval)

    @property
    def peak(self) -> int:
        return max(self.samples, default=0)


def keepalive_get_ms(url: str, requests: int = 50) -> float:
    """Mean latency of ``GET /healthz`` on one keep-alive connection."""
    with httpx.Client(timeout=10) as client:
        client.get(f"{url}/healthz")
        started = time.perf_counter()
        for _ in range(requests):
            client.get(f"{url}/healthz")
    return 1000 * (time.perf_counter() - started) / requests


def wait_for(predicate, timeout: float, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def drained(url: str, traces: int, headers: dict[str, str] | None = None) -> bool:
    """Nothing in flight and every acknowledged trace in the store."""
    m = scrape(url, headers)
    return total(m, "mast_traces_in_flight") == 0 and stored_total(url, headers) >= traces


def reconcile(url: str, tally: Tally, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """Sender-side counts against the processor's metrics and store (see the module docstring)."""
    m = scrape(url, headers)
    received = total(m, "mast_spans_received_total")
    duplicates = total(m, "mast_duplicate_spans_total")
    decoder_reasons = set(_decoder_reasons())
    assembler_dropped = sum(v for (n, ls), v in m.items() if n == "mast_spans_rejected_total" and dict(ls)["reason"] not in decoder_reasons)
    late_dropped = total(m, "mast_late_spans_total", reason="dropped")
    accounted = received + duplicates  # what the assembler dropped is in the answers' rejected_spans
    stored = stored_total(url, headers)
    return {
        "spans_acked": tally.spans_acked, "spans_received": int(received), "duplicates": int(duplicates),
        "assembler_dropped": int(assembler_dropped), "late_dropped": int(late_dropped),
        "spans_unaccounted": tally.spans_acked - int(accounted),
        "traces_acked": len(tally.traces_acked), "traces_total": int(total(m, "mast_traces_total")), "traces_stored": stored,
        "traces_in_flight": int(total(m, "mast_traces_in_flight")),
        "evicted": int(total(m, "mast_traces_evicted_total")),
        "refused_requests": int(total(m, "mast_ingest_refused_requests_total")),
        "exact": tally.spans_acked == accounted and len(tally.traces_acked) == total(m, "mast_traces_total") == stored,
    }


def _decoder_reasons() -> Iterator[str]:
    from mast_otel.processors.ingest import decode as D

    return (value for name, value in vars(D).items() if name.isupper() and isinstance(value, str))


# --- the soak --------------------------------------------------------------------------------
def soak(workdir: Path, *, overload_seconds: float, recovery_seconds: float, senders: int, budget_mb: float,
         runs_per_request: int = 4, factory: RunFactory | None = None, drain_timeout: float = 120.0,
         one_sender_runs: int = 800) -> dict[str, Any]:
    """Run both phases against a fresh subprocess; returns the report (see ``check``)."""
    budget = int(budget_mb * 1024 * 1024)
    factory = factory or RunFactory()
    serve = ServeProcess(workdir, {"assembly": {"max_buffered_bytes": budget, "pressure_eviction_seconds": 2.0}, "log_level": "WARNING"})
    with serve:
        time.sleep(0.5)
        idle_rss = serve.rss()
        api_get_ms = keepalive_get_ms(serve.url)
        started = time.perf_counter()
        one_sender = post_runs(serve.url, factory, one_sender_runs, runs_per_request=runs_per_request)
        one_sender_spans_per_s = one_sender.spans_acked / (time.perf_counter() - started)
        sampler = RSSSampler(serve.pid)
        sampler.start()
        overload, stop = Tally(), threading.Event()
        threads = [Sender(serve.url, factory, overload, stop, runs_per_request=runs_per_request) for _ in range(senders)]
        started = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(overload_seconds)
        stop.set()
        for t in threads:
            t.join(60)
        overload_elapsed = time.monotonic() - started
        alive_after_overload = serve.proc.poll() is None

        recovery, stop2 = Tally(), threading.Event()
        gentle = Sender(serve.url, factory, recovery, stop2, runs_per_request=1, pause=0.05)
        gentle.start()
        time.sleep(recovery_seconds)
        stop2.set()
        gentle.join(60)

        combined = Tally(spans_acked=one_sender.spans_acked + overload.spans_acked + recovery.spans_acked,
                         traces_acked=one_sender.traces_acked | overload.traces_acked | recovery.traces_acked)
        drain_ok = wait_for(lambda: drained(serve.url, len(combined.traces_acked)), drain_timeout, 0.5)
        sampler.halt.set()
        sampler.join()
        counts = reconcile(serve.url, combined)
        final_rss = serve.rss()
        survived = serve.proc.poll() is None
    return {
        "senders": senders, "budget_mb": budget_mb, "overload_seconds": round(overload_elapsed, 1),
        "recovery_seconds": recovery_seconds,
        "overload": overload.summary(), "recovery": recovery.summary(),
        "one_sender_spans_per_s": round(one_sender_spans_per_s), "api_get_keepalive_ms": round(api_get_ms, 2),
        "overload_spans_per_s": round(overload.spans_acked / overload_elapsed),
        "idle_rss_mb": round(idle_rss / 2**20, 1), "peak_rss_mb": round(sampler.peak / 2**20, 1),
        "final_rss_mb": round(final_rss / 2**20, 1),
        "rss_limit_mb": round((idle_rss + 2 * budget) / 2**20 + OVERHEAD_MB, 1),
        "alive_after_overload": alive_after_overload, "survived": survived, "drained": drain_ok,
        "counts": counts,
    }


def check(report: dict[str, Any]) -> list[str]:
    """What the soak promises; an empty list means it held."""
    problems = []
    if not (report["alive_after_overload"] and report["survived"]):
        problems.append("the processor died")
    if report["peak_rss_mb"] > report["rss_limit_mb"]:
        problems.append(f"peak RSS {report['peak_rss_mb']} MB over the limit {report['rss_limit_mb']} MB")
    if not report["drained"]:
        problems.append("the processor did not drain")
    if not report["counts"]["exact"]:
        problems.append(f"counts do not reconcile: {report['counts']}")
    bad = {s: n for s, n in report["overload"]["statuses"].items() if s not in (200, 429, 503)}
    if bad or report["overload"]["errors"]:
        problems.append(f"unexpected answers under load: {bad} {report['overload']['errors']}")
    refused = report["overload"]["statuses"].get(429, 0) + report["overload"]["statuses"].get(503, 0)
    if refused and report["overload"]["retry_after_seen"] != refused:
        problems.append("a 429/503 came without Retry-After")
    recovery = report["recovery"]
    settled = recovery["last_refusal_s"] is None or recovery["last_refusal_s"] < report["recovery_seconds"] / 2
    if not recovery["statuses"].get(200) or not settled:
        problems.append(f"not recovered within half the recovery phase after load dropped: {recovery}")
    return problems


# --- hostile profiles ------------------------------------------------------------------------
HOSTILE_BUDGET_MB = 32
EXPORT_PATH = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def _grpc_exports(port: int, requests: int, factory: RunFactory) -> Counter:
    """A well-behaved gRPC exporter's answers (status names), one request at a time, 10 s deadline each."""
    import grpc

    answers: Counter = Counter()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        export = channel.unary_unary(EXPORT_PATH)
        for _ in range(requests):
            body, _, _ = factory.batch(4)
            try:
                export(body, timeout=10)
                answers["OK"] += 1
            except grpc.RpcError as exc:
                answers[exc.code().name] += 1
    return answers


def _post_each(url: str, requests: int, body_of: Any) -> dict[int, int]:
    """Post ``body_of(i)`` for each ``i`` once, as a sender that does not retry; the statuses it got."""
    statuses: Counter = Counter()
    with httpx.Client(timeout=60) as client:
        for i in range(requests):
            statuses[client.post(f"{url}/v1/traces", content=body_of(i), headers={"Content-Type": PROTOBUF}).status_code] += 1
    return dict(statuses)


def long_ids_body(i: int) -> bytes:
    """The ``i``-th request of the ``long_ids`` profile: a whole run with long conversation and tool
    call ids, 12 tool calls of a run that never ends with such ids, or a part of a run that never
    ends with a long id in every value that becomes a key (service and agent names, session ids)."""
    from hostile_clients import long_key_run, tool_spans, whole_run

    if i % 2 == 0:
        return whole_run(200_000)
    return tool_spans(os.urandom(16), 12, 200_000).SerializeToString() if i % 4 == 1 else long_key_run(200_000)


def _attack(profile: str, serve: ServeProcess, seconds: float, requests: int = 400) -> dict[str, Any]:
    """Run one hostile profile for about ``seconds`` while a well-behaved sender keeps going;
    returns what each side was told."""
    from hostile_clients import StalledSender, whole_run

    normal, stop = Tally(), threading.Event()
    sender = Sender(serve.url, RunFactory(seed=11), normal, stop, runs_per_request=2, pause=0.05)
    sender.start()
    report: dict[str, Any] = {}
    try:
        if profile == "long_ids":  # requests of about 4.7 MB of 200,000-character ids: whole runs and open ones
            report["attacker_statuses"] = _post_each(serve.url, requests, long_ids_body)
        elif profile == "stalled_grpc":  # 4 connections x 4 streams stalled mid-message, from another address
            stalled = [StalledSender(serve.grpc_port, 4) for _ in range(4)]
            try:
                report["grpc_exporter"] = dict(_grpc_exports(serve.grpc_port, int(seconds * 4), RunFactory(seed=13)))
            finally:
                for s in stalled:
                    s.close()
        elif profile == "declared_size":  # 64 bodies declared at 16 MiB, one byte sent, then idle
            sockets = []
            for _ in range(64):
                sock = socket.create_connection(("127.0.0.1", serve.http_port))
                sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                             b"Content-Length: 16777216\r\n\r\n\x0a")
                sockets.append(sock)
            time.sleep(seconds)
            report["request_bytes_in_flight"] = total(scrape(serve.url), "mast_request_bytes_in_flight")
            for sock in sockets:
                sock.close()
        elif profile == "dead_reexport":  # the backend accepts and never answers; 200 runs of ~4 MB each
            report["attacker_statuses"] = _post_each(serve.url, 200, lambda i: whole_run(180_000))
        else:
            raise ValueError(f"unknown hostile profile {profile!r}")
    finally:
        stop.set()
        sender.join(60)
    report["normal_sender"] = normal.summary()
    return report


HOSTILE_PROFILES = ("long_ids", "stalled_grpc", "declared_size", "dead_reexport")


def hostile(workdir: Path, profile: str, *, budget_mb: float = HOSTILE_BUDGET_MB, seconds: float = 15.0,
            requests: int = 400) -> dict[str, Any]:
    """One hostile profile against a fresh ``serve`` with a ``budget_mb`` budget: RSS sampled
    throughout and checked against the same envelope as the soak (idle + 2x budget + slack)."""
    from hostile_clients import SilentBackend

    budget = int(budget_mb * 1024 * 1024)
    overrides: dict[str, Any] = {"assembly": {"max_buffered_bytes": budget}, "log_level": "WARNING",
                                 "receiver": {"body_timeout_seconds": 5.0}}
    with SilentBackend() as backend:
        if profile == "dead_reexport":
            overrides["exporters"] = {"otlp": [{"endpoint": backend.url, "timeout_seconds": 600}]}
        with ServeProcess(workdir / profile, overrides) as serve:
            time.sleep(0.5)
            idle_rss = serve.rss()
            sampler = RSSSampler(serve.pid)
            sampler.start()
            report = _attack(profile, serve, seconds, requests)
            time.sleep(1.0)
            m = scrape(serve.url)
            sampler.halt.set()
            sampler.join()
            report.update({
                "profile": profile, "budget_mb": budget_mb,
                "idle_rss_mb": round(idle_rss / 2**20, 1), "peak_rss_mb": round(sampler.peak / 2**20, 1),
                "rss_limit_mb": round((idle_rss + 2 * budget) / 2**20 + OVERHEAD_MB, 1),
                "buffered_mb_at_end": round(total(m, "mast_buffered_bytes") / 2**20, 1),
                "refused_requests": {dict(ls)["reason"]: v for (n, ls), v in m.items()
                                     if n == "mast_ingest_refused_requests_total"},
                "export_dropped_spans": total(m, "mast_export_dropped_spans_total"),
                "alive": serve.proc.poll() is None,
            })
    report["held"] = report["alive"] and report["peak_rss_mb"] <= report["rss_limit_mb"] and bool(
        report["normal_sender"]["statuses"].get(200)) and not report["normal_sender"]["errors"]
    if profile == "stalled_grpc":
        report["held"] = report["held"] and report["grpc_exporter"].get("OK", 0) > 0 and "DEADLINE_EXCEEDED" not in report["grpc_exporter"]
    return report


# --- the hot path, in process --------------------------------------------------------------
def hot_path(workdir: Path, requests: int = 400, runs_per_request: int = 4, repeats: int = 3) -> dict[str, Any]:
    """Decode -> assemble (live detection) -> diagnose -> store, in one process, as spans per
    second (best of ``repeats``), with the write-ahead log off (baseline) and on (each request
    logged and fsynced before the next, as one sender sees it); plus the top functions by own
    time under cProfile."""
    import cProfile
    import pstats

    from mast_otel.processors.config import ProcessorConfig
    from mast_otel.processors.ingest.decode import decode_protobuf
    from mast_otel.processors.service.telemetry.metrics import Metrics
    from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
    from mast_otel.processors.service.store.diagnoses import DiagnosisStore
    from mast_otel.processors.service.wal import SpanLog

    factory = RunFactory()
    bodies = [factory.batch(runs_per_request) for _ in range(requests)]
    spans = sum(b[2] for b in bodies)

    def pipeline(name: str, logged: bool) -> IngestStage:
        config = ProcessorConfig(assembly={"grace_seconds": 0}, store={"path": str(workdir / f"{name}.sqlite")})
        metrics = Metrics(config.metrics)
        wal = SpanLog(config.wal, config.wal.resolve_directory(config.store.path), metrics.registry) if logged else None
        if wal is not None:
            wal.start()
        return IngestStage(config, metrics, DiagnosisStore(config.store.path), wal=wal)

    def once(p: IngestStage) -> float:
        options = p.decode_options
        started = time.perf_counter()
        for i, (body, _, _) in enumerate(bodies):
            p.durable(p.ingest(decode_protobuf(body, options), "http", body))
            if i % 20 == 19:
                p.sweep()
        p.sweep()
        seconds = time.perf_counter() - started
        if p.wal is not None:
            p.wal.shutdown()
        return seconds

    best: dict[str, float] = {}
    for n in range(repeats):
        for name, logged in (("wal_off", False), ("wal_on", True)):
            best[name] = min(best.get(name, float("inf")), once(pipeline(f"{name}-{n}", logged)))
    profiler = cProfile.Profile()
    profiler.runcall(once, pipeline("profiled", False))  # with the log on, waiting for fsync would top the list
    stats = pstats.Stats(profiler)
    top = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:12]  # type: ignore[attr-defined]
    total_time = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    return {
        "spans": spans, "runs": requests * runs_per_request,
        "spans_per_s": {name: round(spans / t) for name, t in best.items()},
        "ratio_to_wal_off": {name: round(best["wal_off"] / t, 3) for name, t in best.items()},
        "top_own_time": [
            {"function": f"{Path(f).name}:{line}({fn})", "share": round(v[2] / total_time, 3)} for (f, line, fn), v in top
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--overload-seconds", type=float, default=60)
    parser.add_argument("--recovery-seconds", type=float, default=30)
    parser.add_argument("--senders", type=int, default=16)
    parser.add_argument("--budget-mb", type=float, default=8)
    parser.add_argument("--hot-path", action="store_true", help="profile decode -> diagnose -> store in process instead")
    parser.add_argument("--hostile", nargs="*", choices=HOSTILE_PROFILES, metavar="PROFILE",
                        help=f"run hostile profiles instead (all when none is named): {', '.join(HOSTILE_PROFILES)}")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if args.hot_path:
        with tempfile.TemporaryDirectory(prefix="mast-hot-") as tmp:
            result = hot_path(Path(tmp))
        print(json.dumps(result, indent=2))
        if not args.no_write:
            write_doc_block("hot_path", "```json\n" + json.dumps(result, indent=2) + "\n```", DOC)
        return 0
    if args.hostile is not None:
        with tempfile.TemporaryDirectory(prefix="mast-hostile-") as tmp:
            reports = {p: hostile(Path(tmp), p) for p in (args.hostile or HOSTILE_PROFILES)}
        print(json.dumps(reports, indent=2))
        if not args.no_write:
            write_doc_block("hostile", "```json\n" + json.dumps(reports, indent=2) + "\n```", DOC)
        return 0 if all(r["held"] for r in reports.values()) else 1
    with tempfile.TemporaryDirectory(prefix="mast-soak-") as tmp:
        report = soak(Path(tmp), overload_seconds=args.overload_seconds, recovery_seconds=args.recovery_seconds,
                      senders=args.senders, budget_mb=args.budget_mb)
    problems = check(report)
    report["held"] = not problems
    print(json.dumps(report, indent=2))
    for p in problems:
        print("FAILED:", p, file=sys.stderr)
    if not args.no_write:
        write_doc_block("soak", "```json\n" + json.dumps(report, indent=2) + "\n```", DOC)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
