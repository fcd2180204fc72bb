"""GenAI log records on ``mast-otel serve`` replicas sharing one PostgreSQL store.

The spans go through the trace-id router of ``test_replicas`` (the gateway's ``loadbalancing``
exporter); the records are sent by the SDK's OTLP/HTTP log exporter to the replica the same trace
id picks (what ``routing_key: traceID`` does for logs), or, misrouted, to another one. Routed,
the records are joined and the run is diagnosed with their content; misrouted, they are dropped
there as ``span_never_came`` (records are not parked in the shared store: see docs/processor.md).
"""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs.export import LogRecordExportResult

from tests.service.support import wait_for
from tests.service.test_logs_receiver import CALLS, _agent_run
from tests.store.test_replicas import WAIT, Acknowledged, Replica, Router, _diagnosis

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def pair(postgres, tmp_path_factory):
    url = postgres.create_database("mast_replica_logs")
    folder = tmp_path_factory.mktemp("replica-logs")
    replicas = [Replica(folder / f"r{i}", url) for i in range(2)]
    try:
        for r in replicas:
            r.start()
        router = Router([r.url for r in replicas])
        yield replicas, router
        router.close()
    finally:
        for r in replicas:
            r.stop()


def _send(replicas, router, *, misrouted: bool):
    spans, logs, trace_id = _agent_run(content_on_spans=False, content_in_logs=True)
    owner = router.replica_of(trace_id)
    target = replicas[(owner + 1) % len(replicas) if misrouted else owner]
    assert OTLPLogExporter(endpoint=f"{target.url}/v1/logs").export(logs) is LogRecordExportResult.SUCCESS
    assert Acknowledged(router.url).export(spans).name == "SUCCESS"
    return trace_id, replicas[owner], target


def _modes(replica, trace_id):
    d = _diagnosis(replica, trace_id)
    return [m["mode"] for m in d["modes"]] if d is not None else None


def _dropped(replica, reason: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(s.value for f in text_string_to_metric_families(replica.get("/metrics").text) for s in f.samples
               if s.name == "mast_log_records_dropped_total" and s.labels.get("reason") == reason)


def test_records_routed_by_trace_id_are_joined_on_the_replica_that_holds_the_run(pair):
    replicas, router = pair
    trace_id, owner, target = _send(replicas, router, misrouted=False)
    assert target is owner
    wait_for(lambda: _modes(owner, trace_id) is not None, timeout=WAIT, interval=0.2)
    assert "FM-1.3" in _modes(owner, trace_id)
    for replica in replicas:  # the content-based finding shows on every replica
        assert "FM-1.3" in _modes(replica, trace_id)
    assert owner.metric("mast_log_records_joined_total") >= 2 * CALLS


def test_records_sent_to_another_replica_are_dropped_there_and_counted(pair):
    replicas, router = pair
    before = {id(r): _dropped(r, "span_never_came") for r in replicas}
    trace_id, owner, target = _send(replicas, router, misrouted=True)
    assert target is not owner
    wait_for(lambda: _modes(owner, trace_id) is not None, timeout=WAIT, interval=0.2)
    assert "FM-1.3" not in _modes(owner, trace_id)  # the run was diagnosed without its content
    # the other replica let go of them after its idle timeout, counted
    wait_for(lambda: _dropped(target, "span_never_came") - before[id(target)] == 2 * CALLS, timeout=WAIT, interval=0.2)
