"""GenAI log records on ``mast-otel serve`` replicas sharing one PostgreSQL store.

The spans go through the trace-id router of ``test_replicas`` (the gateway's ``loadbalancing``
exporter); the records are sent by the SDK's OTLP/HTTP log exporter to the replica the same trace
id picks (what ``routing_key: traceID`` does for logs), or, misrouted, to another one. Routed,
the records are joined and the run is diagnosed with their content; misrouted, the replica they
reached parks them in the shared store once no span of theirs came within its grace, and the
replica that completes the run joins them before its diagnosis.
"""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.sdk._logs.export import LogRecordExportResult

from tests.service.support import wait_for
from tests.service.test_logs_receiver import CALLS, _agent_run
from tests.store.test_replicas import WAIT, Acknowledged, _diagnosis, replica_cluster

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def pair(postgres, tmp_path_factory):
    with replica_cluster(postgres, tmp_path_factory, "mast_replica_logs", 2) as two:
        yield two


def _send(replicas, router, *, misrouted: bool):
    spans, logs, trace_id = _agent_run(content_on_spans=False, content_in_logs=True)
    owner = router.replica_of(trace_id)
    target = replicas[(owner + 1) % len(replicas) if misrouted else owner]
    parked = target.metric("mast_log_records_parked_total")
    assert OTLPLogExporter(endpoint=f"{target.url}/v1/logs").export(logs) is LogRecordExportResult.SUCCESS
    if misrouted:  # the spans come once the records are parked (a record parked after the run's diagnosis is not joined)
        wait_for(lambda: target.metric("mast_log_records_parked_total") - parked == 2 * CALLS, timeout=WAIT, interval=0.1)
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


def test_records_sent_to_another_replica_are_parked_and_joined_by_the_replica_that_holds_the_run(pair):
    replicas, router = pair
    dropped = {id(r): _dropped(r, "span_never_came") for r in replicas}
    joined = {id(r): r.metric("mast_log_records_joined_total") for r in replicas}
    trace_id, owner, target = _send(replicas, router, misrouted=True)
    assert target is not owner
    wait_for(lambda: _modes(owner, trace_id) is not None, timeout=WAIT, interval=0.2)
    assert "FM-1.3" in _modes(owner, trace_id)  # diagnosed with the content the other replica received
    assert owner.metric("mast_log_records_joined_total") - joined[id(owner)] == 2 * CALLS
    assert target.metric("mast_log_records_joined_total") == joined[id(target)]
    assert all(_dropped(r, "span_never_came") == dropped[id(r)] for r in replicas)
