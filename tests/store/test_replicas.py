"""Three ``mast-otel serve`` replicas sharing one real PostgreSQL store, fed the way a Collector
gateway feeds them: the OpenTelemetry SDK's OTLP exporter sends to a small router that picks a
replica by trace id (as the ``loadbalancing`` exporter with ``routing_key: traceID`` does).

Every run is diagnosed once and visible from every replica's API and web view; an outcome
posted to any replica reaches the run; the replicas' metrics add up to the runs sent; a run
the gateway re-routes halfway is merged into one diagnosis; a replica killed with SIGKILL and
restarted on its own write-ahead log loses no acknowledged span.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mast_otel.wire import attributes as A
from tests.service.support import emit_run, provider_for, wait_for

REPLICAS = 3
WAIT = 90.0  # seconds a shared, loaded machine may take for a run to reach every replica


class Router:
    """An OTLP/HTTP endpoint that splits each export request by trace id and forwards each part
    to its replica; a replica's refusal (or absence) is answered 503, so the exporter retries."""

    def __init__(self, replicas: list[str]) -> None:
        self.replicas = replicas
        self.moved: dict[str, int] = {}  # trace id -> replica: the ring changed for this run
        router = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                status = router.forward(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                if status != 200:
                    self.send_header("Retry-After", "1")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def replica_of(self, trace_id: str) -> int:
        if trace_id in self.moved:
            return self.moved[trace_id]
        return int(hashlib.sha256(bytes.fromhex(trace_id)).hexdigest(), 16) % len(self.replicas)

    def forward(self, body: bytes) -> int:
        parts: dict[int, ExportTraceServiceRequest] = {}
        for rs in ExportTraceServiceRequest.FromString(body).resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    part = parts.setdefault(self.replica_of(span.trace_id.hex()), ExportTraceServiceRequest())
                    out_rs = part.resource_spans.add(resource=rs.resource, schema_url=rs.schema_url)
                    out_rs.scope_spans.add(scope=ss.scope, schema_url=ss.schema_url).spans.append(span)
        for replica, part in parts.items():
            try:
                answer = httpx.post(f"{self.replicas[replica]}/v1/traces", content=part.SerializeToString(),
                                    headers={"Content-Type": "application/x-protobuf"}, timeout=30)
            except httpx.HTTPError:
                return 503
            if answer.status_code != 200:
                return answer.status_code if answer.status_code in (429, 503) else 502
        return 200

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Replica:
    """One ``mast-otel serve`` process on its own write-ahead log, sharing the PostgreSQL store."""

    def __init__(self, folder: Path, store_url: str) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "mast.yaml").write_text(
            "receiver: {host: 127.0.0.1, grpc_enabled: false}\n"
            "assembly: {grace_seconds: 0.2, idle_timeout_seconds: 3, sweep_interval_seconds: 0.05, retention_seconds: 120}\n"
            f"wal: {{directory: {folder / 'wal'}, fsync: interval}}\n"
        )
        self.env = {**os.environ, "MAST_OTEL_STORE__URL": store_url}
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        log = self.folder / f"serve-{self.starts}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mast_otel.processors.cli", "serve", "--config", str(self.folder / "mast.yaml"),
             "--http-port", "0"], stdout=open(log, "w"), stderr=subprocess.STDOUT, env=self.env)

        def ready():
            assert self.proc.poll() is None, log.read_text()
            return re.search(r"ready: OTLP/HTTP \+ API (http://127\.0\.0\.1:\d+)", log.read_text())

        self.url = wait_for(ready, timeout=WAIT, interval=0.1).group(1)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def get(self, path: str, **params) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", params=params, timeout=30)

    def metric(self, name: str) -> float:
        from prometheus_client.parser import text_string_to_metric_families

        return sum(sample.value for family in text_string_to_metric_families(self.get("/metrics").text)
                   for sample in family.samples if sample.name == name)


class Acknowledged(OTLPSpanExporter):
    """The SDK's OTLP/HTTP exporter, remembering which spans the router acknowledged."""

    def __init__(self, endpoint: str) -> None:
        super().__init__(endpoint=endpoint, timeout=60)
        self.results: list[tuple[str, SpanExportResult]] = []

    def export(self, spans):
        result = super().export(spans)
        self.results.extend((format(s.context.span_id, "016x"), result) for s in spans)
        return result


@contextlib.contextmanager
def replica_cluster(postgres, tmp_path_factory, name: str, count: int) -> Iterator[tuple[list[Replica], Router]]:
    """``count`` replicas on one fresh database ``name``, behind a router that spreads requests."""
    url = postgres.create_database(name)
    folder = tmp_path_factory.mktemp(name)
    replicas = [Replica(folder / f"r{i}", url) for i in range(count)]
    try:
        for r in replicas:
            r.start()
        router = Router([r.url for r in replicas])
        yield replicas, router
        router.close()
    finally:
        for r in replicas:
            r.stop()


@pytest.fixture(scope="module")
def cluster(postgres, tmp_path_factory):
    with replica_cluster(postgres, tmp_path_factory, "mast_replicas", REPLICAS) as pair:
        yield pair


def _sender(router: Router) -> tuple[Acknowledged, object]:
    exporter = Acknowledged(router.url)
    return exporter, provider_for(exporter)


def _diagnosis(replica: Replica, trace_id: str) -> dict | None:
    answer = replica.get(f"/v1/diagnoses/{trace_id}")
    return answer.json() if answer.status_code == 200 else None


def _traces_total(replicas: list[Replica]) -> float:
    return sum(r.metric("mast_traces_total") for r in replicas)


def _step(tracer, ctx, i: int) -> None:
    """One model call and the tool call it asked for, under the run's root."""
    with tracer.start_as_current_span("chat gpt-4o", context=ctx, attributes={
        A.GEN_AI_OPERATION_NAME: A.OP_CHAT, A.GEN_AI_REQUEST_MODEL: "gpt-4o", A.MAST_STEP_INDEX: i}):
        pass
    with tracer.start_as_current_span("execute_tool kubectl_get", context=ctx, attributes={
        A.GEN_AI_OPERATION_NAME: A.OP_EXECUTE_TOOL, A.GEN_AI_TOOL_NAME: "kubectl_get", A.MAST_STEP_INDEX: i,
        A.MAST_TOOL_ARGS_HASH: f"a{i}"}):
        pass


def _open_run(provider):
    tracer = provider.get_tracer("tests.replicas")
    root = tracer.start_span("invoke_agent triage", attributes={
        A.GEN_AI_OPERATION_NAME: A.OP_INVOKE_AGENT, A.GEN_AI_AGENT_NAME: "triage"})
    return tracer, root, trace.set_span_in_context(root), format(root.get_span_context().trace_id, "032x")


def test_runs_are_diagnosed_once_and_every_replica_answers_for_all(cluster):
    replicas, router = cluster
    before = _traces_total(replicas)
    exporter, provider = _sender(router)
    sent = [emit_run(provider, tools=(("kubectl_get", "a"), ("kubectl_get", "a"), ("kubectl_get", "a")))[0]
            for _ in range(9)]
    # an outcome posted, before its run is diagnosed, to a replica that will not diagnose it
    tracer, root, ctx, early = _open_run(provider)
    pending = replicas[(router.replica_of(early) + 1) % REPLICAS]
    answer = httpx.post(f"{pending.url}/v1/outcomes", json={"trace_id": early, "outcome": "failure", "score": 0.1})
    assert answer.status_code == 202 and answer.json()["status"] == "pending"
    _step(tracer, ctx, 0)
    root.end()
    sent.append(early)
    provider.shutdown()
    assert {result for _, result in exporter.results} == {SpanExportResult.SUCCESS}
    assert len({router.replica_of(t) for t in sent}) > 1  # the runs are spread over the replicas

    for replica in replicas:
        wait_for(lambda: all(_diagnosis(replica, t) for t in sent), timeout=WAIT, interval=0.2)
        page = replica.get("/v1/diagnoses", limit=100).json()
        assert {item["trace_id"] for item in page["items"]} >= set(sent)
        for trace_id in sent:
            d = _diagnosis(replica, trace_id)
            assert d["revision"] == 0, d  # diagnosed once (its first revision), by one replica
            view = replica.get(f"/runs/{trace_id}")
            assert view.status_code == 200 and trace_id in view.text
        assert _diagnosis(replica, early)["outcome"] == "failure"
    assert _traces_total(replicas) - before == len(sent)

    # outcomes posted to any replica reach the run, wherever it was diagnosed
    for i, trace_id in enumerate(sent[:-1]):
        target = replicas[(router.replica_of(trace_id) + 1 + i % 2) % REPLICAS]
        answer = httpx.post(f"{target.url}/v1/outcomes", json={"trace_id": trace_id, "outcome": "success"})
        assert answer.status_code == 200 and answer.json()["status"] == "applied"
    for replica in replicas:
        assert all(_diagnosis(replica, t)["outcome"] == "success" for t in sent[:-1])
    assert sum(r.metric("mast_outcomes_total") for r in replicas) >= len(sent)


def test_a_run_the_gateway_re_routes_halfway_is_one_diagnosis(cluster):
    replicas, router = cluster
    before = _traces_total(replicas)
    exporter, provider = _sender(router)
    tracer, root, ctx, trace_id = _open_run(provider)
    first = router.replica_of(trace_id)
    for i in range(2):
        _step(tracer, ctx, i)
    # the first replica diagnoses its half when the run goes idle there
    half = wait_for(lambda: _diagnosis(replicas[first], trace_id), timeout=WAIT, interval=0.2)
    assert half["span_count"] == 4
    router.moved[trace_id] = second = (first + 1) % REPLICAS  # the ring changed: the rest goes elsewhere
    for i in range(2, 4):
        _step(tracer, ctx, i)
    root.end()
    provider.shutdown()
    assert {result for _, result in exporter.results} == {SpanExportResult.SUCCESS}

    whole = wait_for(lambda: (d := _diagnosis(replicas[second], trace_id)) and d["span_count"] == 9 and d,
                     timeout=WAIT, interval=0.2)
    assert whole["completion"] == "root_ended" and whole["revision"] == 1
    for replica in replicas:
        assert _diagnosis(replica, trace_id)["span_count"] == 9
        listed = replica.get("/v1/diagnoses", limit=500).json()["items"]
        assert [item["trace_id"] for item in listed].count(trace_id) == 1
    assert _traces_total(replicas) - before == 1  # counted once, by the replica that saw it first


def test_a_replica_killed_and_restarted_loses_no_acknowledged_span(cluster):
    replicas, router = cluster
    victim = 1
    exporter, provider = _sender(router)
    runs = []
    while len(runs) < 3:  # runs the victim owns, their roots still open
        tracer, root, ctx, trace_id = _open_run(provider)
        if router.replica_of(trace_id) == victim:
            runs.append((tracer, root, ctx, trace_id))
    for tracer, _, ctx, _ in runs:
        for i in range(2):
            _step(tracer, ctx, i)
    assert len(exporter.results) == 12 and {r for _, r in exporter.results} == {SpanExportResult.SUCCESS}

    replicas[victim].kill()
    replicas[victim].start()  # same write-ahead log folder, a new port
    router.replicas[victim] = replicas[victim].url
    for tracer, root, ctx, _ in runs:
        _step(tracer, ctx, 2)
        root.end()
    provider.shutdown()
    assert {r for _, r in exporter.results} == {SpanExportResult.SUCCESS}

    for _, _, _, trace_id in runs:
        d = wait_for(lambda: (d := _diagnosis(replicas[0], trace_id)) and d["span_count"] == 7 and d,
                     timeout=WAIT, interval=0.2)
        assert d["completion"] in ("root_ended", "abandoned")
    assert replicas[victim].metric("mast_traces_lost_total") == 0


def heavy_reads(replicas: list[Replica], router: Router, readers: int, runs_wanted: int = 3) -> dict:
    """``readers`` threads reading deep pages and the severity page from two replicas while
    ``runs_wanted`` runs are re-routed between them halfway and each gets an outcome posted
    to the replica that did not diagnose its first half; what came of it (checked by the caller
    or printed by ``benchmarks/bench_replica_readers.py``)."""
    import psycopg

    with psycopg.connect(replicas[0].env["MAST_OTEL_STORE__URL"]) as conn:  # old runs: deep pages take time to read
        (stored,) = conn.execute("SELECT COUNT(*) FROM diagnoses WHERE trace_id LIKE 'e%'").fetchone()
        if stored < 300_000:
            conn.execute("""INSERT INTO diagnoses (trace_id, service_name, agent, model, diagnosed_at, completion, span_count,
                            step_count, revision, fatal, mode_count, findings, withdrawn, accounting)
                            SELECT 'e' || lpad(to_hex(g), 31, '0'), 'svc', 'agent', 'model-' || (g % 5000), 1600000000 + g,
                                   'root_ended', 3, 1, 0, 0, 0, '[]', '[]', '{}'
                            FROM generate_series(1, 300000) g ON CONFLICT DO NOTHING""")
    before = _traces_total(replicas)
    # Each half of the runs is sent in one export request, as a batch span processor would: sent
    # span by span, a loaded machine spaces the spans past the grace, and each re-diagnoses the
    # run (late spans), which is right but is not what this measures.
    exporter, recorded = Acknowledged(router.url), InMemorySpanExporter()
    provider = provider_for(recorded)

    def send() -> None:
        spans = recorded.get_finished_spans()
        recorded.clear()
        exporter.export(spans)

    stop = threading.Event()
    refused: list[int] = []
    reads = [0]

    def read(replica: Replica) -> None:
        offset = 0
        while not stop.is_set():
            try:
                answer = httpx.get(f"{replica.url}/v1/diagnoses", params={"limit": 100, "offset": offset}, timeout=30)
                refused.extend([answer.status_code] if answer.status_code >= 500 else [])
                replica.get("/severity")
                reads[0] += 1
            except httpx.HTTPError:
                pass
            offset = (offset + 7919) % 200_000

    runs = []
    while len(runs) < runs_wanted:
        tracer, root, ctx, trace_id = _open_run(provider)
        if router.replica_of(trace_id) in (0, 1):
            runs.append((tracer, root, ctx, trace_id))
    threads = [threading.Thread(target=read, args=(replicas[i % 2],), daemon=True) for i in range(readers)]
    for t in threads:
        t.start()
    posted_pending = 0
    wholes: dict[str, dict | None] = {}
    try:
        for tracer, _, ctx, trace_id in runs:
            other = replicas[1 - router.replica_of(trace_id)]
            posted = httpx.post(f"{other.url}/v1/outcomes", json={"trace_id": trace_id, "outcome": "failure"}, timeout=60)
            posted_pending += posted.status_code == 202 and posted.json()["status"] == "pending"
            for i in range(2):
                _step(tracer, ctx, i)
        send()
        for _, _, _, trace_id in runs:  # each first half diagnosed where it went, when idle there
            wait_for(lambda: _diagnosis(replicas[router.replica_of(trace_id)], trace_id), timeout=WAIT, interval=0.2)
        for tracer, root, ctx, trace_id in runs:
            router.moved[trace_id] = 1 - router.replica_of(trace_id)  # the rest goes to the other one
            for i in range(2, 4):
                _step(tracer, ctx, i)
            root.end()
        send()
        provider.shutdown()
        deadline = time.monotonic() + WAIT  # for all runs together: a broken build reports in minutes, not hours
        for _, _, _, trace_id in runs:
            try:
                wholes[trace_id] = wait_for(lambda: (d := _diagnosis(replicas[2], trace_id)) and d["span_count"] == 9 and d,
                                            timeout=max(deadline - time.monotonic(), 1), interval=0.2)
            except AssertionError:
                wholes[trace_id] = _diagnosis(replicas[2], trace_id)
    finally:
        stop.set()
        for t in threads:
            t.join(40)
    return {
        "readers": readers, "runs": len(runs), "reads": reads[0], "answers_5xx": len(refused),
        "outcomes_pending": posted_pending,
        "exports": sorted({result.name for _, result in exporter.results}),
        "counted": _traces_total(replicas) - before,
        "span_counts": [[(_diagnosis(r, t) or {}).get("span_count") for r in replicas] for *_, t in runs],
        "outcomes_applied": sum(bool(d) and d.get("outcome") == "failure" for d in wholes.values()),
        "revisions": [(d or {}).get("revision") for d in wholes.values()],
    }


def test_heavy_api_reads_never_cost_the_pipeline_a_count_a_span_or_an_outcome(cluster):
    """16 threads reading deep pages from two replicas while runs are re-routed between them and
    outcomes are posted: each run is one diagnosis with every span, counted once, and every
    outcome answered 202 (pending) is applied. 48 readers: benchmarks/bench_replica_readers.py."""
    replicas, router = cluster
    seen = heavy_reads(replicas, router, readers=16)
    assert seen["outcomes_pending"] == seen["runs"] == 3, seen
    assert seen["exports"] == ["SUCCESS"], seen
    assert seen["revisions"] == [1, 1, 1] and seen["outcomes_applied"] == 3, seen
    assert seen["counted"] == 3, seen  # each counted once
    assert seen["span_counts"] == [[9, 9, 9]] * 3, seen
