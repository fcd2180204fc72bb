"""The write-ahead log in process: its format, torn tails, settling, compaction, refusals, group commit."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import threading
import time
import zlib

import grpc
import httpx
import pytest
from durability import make_runs, request
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from prometheus_client import CollectorRegistry

from mast_otel.processors.config import ProcessorConfig, WALConfig
from mast_otel.processors.ingest.decode import decode_protobuf
from mast_otel.processors.service.pipeline.ingest_stage import IngestStage
from mast_otel.processors.service.telemetry.metrics import Metrics
from mast_otel.processors.service.server import ProcessorServer
from mast_otel.processors.service.wal import SpanLog
from mast_otel.processors.service.wal.records import HEAD, MAGIC, MAGIC_V1, PREFIX, PREFIX_V1, PROTOBUF, encode_head, scan


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def _config(tmp_path, retention_seconds: float = 30, **wal) -> ProcessorConfig:
    return ProcessorConfig(assembly={"grace_seconds": 0, "retention_seconds": retention_seconds},
                           store={"path": str(tmp_path / "store.sqlite")}, wal=wal)


def _stage(config: ProcessorConfig, registry_metrics: Metrics | None = None, *, writer=None) -> tuple[IngestStage, SpanLog]:
    from mast_otel.processors.service.store.diagnoses import DiagnosisStore

    metrics = registry_metrics or Metrics(config.metrics)
    wal = SpanLog(config.wal, config.wal.resolve_directory(config.store.path), metrics.registry, writer=writer)
    stage = IngestStage(config, metrics, DiagnosisStore(config.store.path), wal=wal)
    wal.start()
    stage.start()
    return stage, wal


def _send(stage: IngestStage, body: bytes):
    return stage.ingest(decode_protobuf(body, stage.decode_options), "http", body)


def _crash(stage: IngestStage, wal: SpanLog) -> None:
    """What a SIGKILL leaves: the sweeper stops, nothing is flushed or settled, descriptors close."""
    stage.stop(flush=False)
    with wal._cond:
        wal._stopping = True
        wal._cond.notify_all()
        wal._wanted.notify_all()  # the flusher
    if wal._flusher is not None:
        wal._flusher.join(10)
    for holder, name in ((wal._active, "fd"), (wal, "_dir_fd")):
        if holder is not None and getattr(holder, name) >= 0:
            os.close(getattr(holder, name))
            setattr(holder, name, -1)
    if stage.store is not None:
        stage.store.close()


def test_records_round_trip_a_torn_tail_ends_the_scan_and_a_damaged_record_costs_only_itself():
    payloads = [b"first", b"x" * 1000, b"third", b"fourth"]
    data = MAGIC + b"".join(encode_head(PROTOBUF, i + 1, 1.5, p) + p for i, p in enumerate(payloads))
    whole = scan(data)
    assert [(r.position, data[r.offset:r.offset + r.size]) for r in whole.records] == list(enumerate(payloads, 1))
    assert not whole.torn and not whole.skipped
    torn = scan(data[:-2])
    assert len(torn.records) == 3 and torn.torn and torn.valid_bytes == whole.records[3].offset - PREFIX.size - HEAD.size
    for where in (whole.records[1].offset + 500, whole.records[1].offset - HEAD.size - 6):  # the payload, the length
        flipped = bytearray(data)
        flipped[where] ^= 0xFF
        corrupt = scan(bytes(flipped))
        assert [r.position for r in corrupt.records] == [1, 3, 4] and not corrupt.torn and len(corrupt.skipped) == 1
    v1 = MAGIC_V1 + b"".join(PREFIX_V1.pack(HEAD.size + len(p), zlib.crc32(p, zlib.crc32(HEAD.pack(PROTOBUF, i + 1, 1.5))))
                             + HEAD.pack(PROTOBUF, i + 1, 1.5) + p for i, p in enumerate(payloads))
    assert [(r.position, v1[r.offset:r.offset + r.size]) for r in scan(v1).records] == list(enumerate(payloads, 1))


def test_torn_tail_is_cut_and_counted_at_start_and_the_runs_before_it_resume(tmp_path):
    config = _config(tmp_path)
    runs = make_runs(6)
    stage, wal = _stage(config)
    for run in runs:
        assert _send(stage, request(run.steps)).refusal is None
    _crash(stage, wal)
    segment = max(config.wal.resolve_directory(config.store.path).glob("*.wal"))
    size = segment.stat().st_size
    with open(segment, "r+b") as f:  # the last record half written, then garbage
        f.truncate(size - 40)
        f.seek(0, os.SEEK_END)
        f.write(b"\x07" * 25)
    metrics = Metrics(config.metrics)
    stage2, wal2 = _stage(config, metrics)
    try:
        assert _value(metrics.registry, "mast_wal_corrupt_tails_total") == 1
        assert _value(metrics.registry, "mast_wal_truncated_bytes_total") > 25
        assert stage2.in_flight == 5  # the torn record's run is gone, the others resume
        assert _value(metrics.registry, "mast_wal_replayed_spans_total") == sum(len(r.steps) for r in runs[:5])
        assert segment.stat().st_size < size - 40
    finally:
        stage2.shutdown()
        wal2.shutdown()


def test_settled_runs_are_not_replayed_with_the_store_off(tmp_path):
    config = ProcessorConfig(assembly={"grace_seconds": 0}, store={"enabled": False}, wal={"directory": str(tmp_path / "wal")})
    done, going = make_runs(2)
    metrics = Metrics(config.metrics)
    wal = SpanLog(config.wal, config.wal.directory, metrics.registry)
    stage = IngestStage(config, metrics, None, wal=wal)
    wal.start()
    stage.start()
    _send(stage, request([*done.steps, done.root, *going.steps]))
    assert stage.sweep() == 1  # the run whose root arrived
    _crash(stage, wal)
    metrics2 = Metrics(config.metrics)
    wal2 = SpanLog(config.wal, config.wal.directory, metrics2.registry)
    stage2 = IngestStage(config, metrics2, None, wal=wal2)
    wal2.start()
    stage2.start()
    try:
        assert stage2.in_flight == 1
        assert _value(metrics2.registry, "mast_wal_replayed_spans_total") == len(going.steps)
        _send(stage2, request([going.root]))
        assert stage2.sweep() == 1
        assert _value(metrics2.registry, "mast_traces_total", service_name="durability-agent", agent="triage", model="gpt-4o") == 1
    finally:
        stage2.shutdown()
        wal2.shutdown()


def test_compaction_keeps_the_log_bounded_as_runs_complete(tmp_path):
    segment_bytes = 8 * 1024
    config = _config(tmp_path, retention_seconds=0, segment_bytes=segment_bytes)
    metrics = Metrics(config.metrics)
    stage, wal = _stage(config, metrics)
    directory = config.wal.resolve_directory(config.store.path)
    peak_segments = peak_bytes = 0
    appended = 0
    try:
        for i, run in enumerate(make_runs(400)):
            body = request([*run.steps, run.root])
            appended += len(body)
            assert _send(stage, body).refusal is None
            if i % 10 == 9:
                stage.sweep()
                files = list(directory.glob("*.wal"))
                peak_segments = max(peak_segments, len(files))
                peak_bytes = max(peak_bytes, sum(f.stat().st_size for f in files))
        stage.sweep()
        assert appended > 20 * segment_bytes  # many segments were written ...
        assert peak_segments <= 3 and peak_bytes <= 3 * segment_bytes  # ... and deleted as their runs completed
        assert wal.total_bytes == sum(f.stat().st_size for f in directory.glob("*.wal"))
        assert _value(metrics.registry, "mast_wal_segments") == len(list(directory.glob("*.wal")))
    finally:
        stage.shutdown()
        wal.shutdown()


def test_a_run_in_flight_pins_its_segment_until_it_completes(tmp_path):
    config = _config(tmp_path, retention_seconds=0, segment_bytes=2048)
    stage, wal = _stage(config)
    slow, *others = make_runs(60)
    directory = config.wal.resolve_directory(config.store.path)
    try:
        _send(stage, request(slow.steps))
        first = min(directory.glob("*.wal"))
        for run in others:
            _send(stage, request([*run.steps, run.root]))
            stage.sweep()
        files = sorted(directory.glob("*.wal"))
        assert files[0] == first and int(files[-1].stem) > 10  # many segments written, the slow run's kept
        assert len(files) == 2  # the ones between were deleted as their runs completed
        _send(stage, request([slow.root]))
        stage.sweep()
        assert not first.exists() and len(list(directory.glob("*.wal"))) == 1
    finally:
        stage.shutdown()
        wal.shutdown()


def test_a_run_that_never_ends_is_diagnosed_early_instead_of_pinning_the_log(tmp_path):
    """Past ``evict_at`` of ``max_bytes`` the runs holding the oldest segment are evicted, so the log
    is not filled by one run that keeps sending (without it, requests are refused once it is full)."""
    config = _config(tmp_path, segment_bytes=2048, max_bytes=24 * 1024, evict_at=0.5)
    metrics = Metrics(config.metrics)
    stage, wal = _stage(config, metrics)
    endless, *others = make_runs(300)
    sent, peak = 0, 0
    try:
        for i, run in enumerate(others):
            step = Span()
            step.CopyFrom(endless.steps[i % len(endless.steps)])
            step.span_id = os.urandom(8)
            for body in (request([step]), request([*run.steps, run.root])):
                assert _send(stage, body).refusal is None
            sent += 1
            stage.sweep()
            peak = max(peak, wal.total_bytes)
        assert sent * 300 > config.wal.max_bytes and peak <= config.wal.max_bytes
        assert _value(metrics.registry, "mast_traces_evicted_total", reason="wal_max_bytes") >= 1
        assert _value(metrics.registry, "mast_wal_append_errors_total", reason="log_full") == 0
        _send(stage, request([endless.root]))
        stage.sweep()
        whole = stage.store.get(endless.trace_id)
        assert whole.span_count == sent + 1  # each early diagnosis kept what came before
        assert all(stage.store.get(run.trace_id).span_count == run.span_count for run in others)
    finally:
        stage.shutdown()
        wal.shutdown()


def _no_space_after(budget: int):
    left = [budget]

    def writev(fd, parts):
        size = sum(len(p) for p in parts)
        if size > left[0]:
            os.write(fd, b"".join(parts)[: left[0]])  # a partial write first, as a filling disk does
            left[0] = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        left[0] -= size
        return os.writev(fd, parts)

    return writev


def test_a_write_that_fails_refuses_the_request_buffers_nothing_and_leaves_no_torn_record(tmp_path):
    config = _config(tmp_path)
    metrics = Metrics(config.metrics)
    stage, wal = _stage(config, metrics, writer=_no_space_after(3000))
    runs = make_runs(40)
    receipts = [_send(stage, request(r.steps)) for r in runs]
    accepted = sum(r.refusal is None for r in receipts)
    refused = [r.refusal for r in receipts if r.refusal is not None]
    try:
        assert 0 < accepted < len(runs) and refused
        assert all(r.reason == "wal_no_space" and r.unavailable for r in refused)
        assert stage.in_flight == accepted  # nothing of a refused request was buffered
        assert _value(metrics.registry, "mast_wal_append_errors_total", reason="no_space") == len(refused)
        segment = max(config.wal.resolve_directory(config.store.path).glob("*.wal"))
        assert not scan(segment.read_bytes()).torn  # the partial write was cut off again
    finally:
        _crash(stage, wal)


def test_over_max_bytes_http_answers_503_with_retry_after_and_grpc_unavailable(tmp_path):
    config = ProcessorConfig(receiver={"host": "127.0.0.1", "http_port": 0, "grpc_port": 0, "retry_after_seconds": 3},
                             store={"path": str(tmp_path / "store.sqlite")}, wal={"max_bytes": 4096})
    runs = make_runs(20)
    with ProcessorServer(config) as server:
        statuses = []
        for run in runs:
            r = httpx.post(f"{server.http_url}/v1/traces", content=request(run.steps),
                           headers={"Content-Type": "application/x-protobuf"})
            statuses.append(r.status_code)
            if r.status_code == 503:
                assert r.headers["Retry-After"] == "3"
        assert 200 in statuses and 503 in statuses and set(statuses) <= {200, 503}
        with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                                         request_serializer=ExportTraceServiceRequest.SerializeToString,
                                         response_deserializer=ExportTraceServiceResponse.FromString)
            with pytest.raises(grpc.RpcError) as refused:
                export(ExportTraceServiceRequest.FromString(request(runs[-1].steps)), timeout=10)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert server.ingest.in_flight == statuses.count(200)


def test_concurrent_requests_share_fsyncs(tmp_path):
    config = _config(tmp_path)
    metrics = Metrics(config.metrics)
    stage, wal = _stage(config, metrics)
    bodies = [request(r.steps) for r in make_runs(64)]
    start = threading.Barrier(len(bodies))
    errors = []

    def client(body: bytes) -> None:
        start.wait()
        refusal = stage.durable(_send(stage, body))
        if refusal is not None:
            errors.append(refusal)

    threads = [threading.Thread(target=client, args=(b,)) for b in bodies]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        fsyncs = _value(metrics.registry, "mast_wal_fsync_seconds_count")
        assert not errors and stage.in_flight == len(bodies)
        assert 0 < fsyncs < len(bodies)
    finally:
        stage.shutdown()
        wal.shutdown()


def test_a_sync_round_wakes_each_event_loop_once_whatever_its_waiters(tmp_path):
    """Waking an event loop from the flusher is a system call and a turn of the loop: one per
    round and loop, not one per request waiting in it (main woke it once per request)."""
    wal = SpanLog(WALConfig(fsync="always"), tmp_path / "wal", CollectorRegistry())
    wal.start()

    async def wait_for_five() -> tuple[list[object], list[object]]:
        loop = asyncio.get_running_loop()
        wakes: list[object] = []
        original = loop.call_soon_threadsafe

        def counted(callback, *args, **kwargs):
            wakes.append(callback)
            return original(callback, *args, **kwargs)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
        with wal._sync_lock:  # the flusher's round waits here, so the five appends are pending together
            positions = [wal.append(PROTOBUF, b"x" * 100, 0.0).position for _ in range(5)]
            waits = [asyncio.ensure_future(wal.wait_async(p)) for p in positions]
            await asyncio.sleep(0.05)
        outcomes = await asyncio.wait_for(asyncio.gather(*waits), 10)
        return wakes, list(outcomes)

    try:
        wakes, outcomes = asyncio.run(wait_for_five())
        assert outcomes == [None] * 5
        # the round under way when the lock was taken may have held the first append only
        assert 1 <= len(wakes) <= 2
        assert wal._synced == wal.position == 5
    finally:
        wal.shutdown()


def test_appends_during_a_sync_wait_for_the_next_round_without_waking_the_flusher(tmp_path):
    """The flusher is woken by the append that finds it idle; appends made while it syncs are
    found when that sync ends (one sync for all of them), each acknowledged only once synced."""
    wal = SpanLog(WALConfig(fsync="always"), tmp_path / "wal", CollectorRegistry())
    wal.start()
    wakes = []
    original = wal._wanted.notify
    wal._wanted.notify = lambda n=1: (wakes.append(n), original(n))  # type: ignore[method-assign]
    try:
        with wal._sync_lock:
            wal.append(PROTOBUF, b"first", 0.0)
            deadline = time.monotonic() + 10
            while not wal._syncing and time.monotonic() < deadline:  # the flusher took the first record
                time.sleep(0.001)
            assert wal._syncing
            later = [wal.append(PROTOBUF, b"later", 0.0).position for _ in range(3)]
            assert wal._synced < later[0]  # not acknowledged before its sync
        assert all(wal.wait(p) is None for p in later)
        assert len(wakes) == 1
    finally:
        wal.shutdown()


def test_start_and_shutdown_are_safe_twice_and_a_clean_stop_leaves_no_run_in_flight(tmp_path):
    config = _config(tmp_path)
    stage, wal = _stage(config)
    wal.start()
    run = make_runs(1)[0]
    _send(stage, request(run.steps))
    stage.shutdown()  # the final flush settles the run
    wal.shutdown()
    wal.shutdown()
    metrics = Metrics(config.metrics)
    stage2, wal2 = _stage(config, metrics)
    try:
        assert stage2.in_flight == 0 and _value(metrics.registry, "mast_wal_replayed_spans_total") == 0
        assert len(stage2.get_run(run.trace_id).spans) == len(run.steps)  # retained again for late spans
    finally:
        stage2.shutdown()
        wal2.shutdown()


def test_a_second_processor_cannot_open_the_same_log(tmp_path):
    from mast_otel.processors.service.wal.log import WALInUse  # a UsageError: one line and exit 2 from the CLI

    config = _config(tmp_path)
    first = SpanLog(config.wal, tmp_path / "wal", CollectorRegistry())
    second = SpanLog(config.wal, tmp_path / "wal", CollectorRegistry())
    first.start()
    try:
        with pytest.raises(WALInUse, match="in use by another process"):
            second.start()
    finally:
        first.shutdown()
    second = SpanLog(config.wal, tmp_path / "wal", CollectorRegistry())
    second.start()  # free again once the first is closed
    second.shutdown()


def test_json_requests_are_logged_as_received_and_replayed(tmp_path):
    from google.protobuf import json_format

    from mast_otel.processors.ingest.decode import decode_json

    config = _config(tmp_path)
    runs = make_runs(3)
    stage, wal = _stage(config)
    for run in runs:
        body = json_format.MessageToJson(ExportTraceServiceRequest.FromString(request(run.steps))).encode()
        assert stage.ingest(decode_json(body, stage.decode_options), "http", body, as_json=True).refusal is None
    _crash(stage, wal)
    metrics = Metrics(config.metrics)
    stage2, wal2 = _stage(config, metrics)
    try:
        assert stage2.in_flight == 3
        assert _value(metrics.registry, "mast_wal_replayed_spans_total") == sum(len(r.steps) for r in runs)
    finally:
        stage2.shutdown()
        wal2.shutdown()


def test_a_diagnosed_run_stays_in_the_log_while_retained_and_leaves_once_forgotten(tmp_path):
    config = ProcessorConfig(assembly={"grace_seconds": 0, "retention_seconds": 30, "max_traces_in_flight": 5},
                             store={"path": str(tmp_path / "store.sqlite")}, wal={"segment_bytes": 2048})
    stage, wal = _stage(config)
    runs = make_runs(120)
    directory = config.wal.resolve_directory(config.store.path)
    try:
        for run in runs:
            assert _send(stage, request([*run.steps, run.root])).refusal is None
            stage.sweep()
        retained = set(stage._assembler.retained)
        assert len(retained) == 5 and set(wal._holds) == retained  # the forgotten ones were let go ...
        assert len(list(directory.glob("*.wal"))) <= 7  # ... and their segments deleted
    finally:
        _crash(stage, wal)
    stage2, wal2 = _stage(config)
    try:  # the retained runs come back as diagnosed, not in flight
        assert stage2.in_flight == 0 and set(stage2._assembler.retained) == retained
        assert all(len(stage2.get_run(r.trace_id).spans) == r.span_count for r in runs if r.trace_id in retained)
    finally:
        stage2.shutdown()
        wal2.shutdown()


def _late(run, n: int = 1) -> bytes:
    late = Span()
    late.CopyFrom(run.steps[-1])
    late.span_id = (int.from_bytes(late.span_id, "big") ^ (0xA5A5 + n)).to_bytes(8, "big")
    return request([late])


def _rejected(stage: IngestStage, body: bytes) -> int:
    result = decode_protobuf(body, stage.decode_options)
    receipt = stage.ingest(result, "http", body)
    assert receipt.refusal is None
    answer = stage.answer(result, receipt.dropped)
    return answer.partial_success.rejected_spans if answer is not None else 0


def test_a_late_span_after_the_retention_is_named_rejected_before_any_sweep_forgets_the_run(tmp_path):
    """Whether a late span merges depends on when it arrives against the run's expiry, not on
    whether the sweeper has forgotten the run yet (no sweep runs in this test)."""
    config = ProcessorConfig(assembly={"grace_seconds": 0, "retention_seconds": 30, "sweep_interval_seconds": 3600},
                             store={"path": str(tmp_path / "store.sqlite")})
    now = [1000.0]
    metrics = Metrics(config.metrics)
    wal = SpanLog(config.wal, config.wal.resolve_directory(config.store.path), metrics.registry)
    from mast_otel.processors.service.store.diagnoses import DiagnosisStore

    stage = IngestStage(config, metrics, DiagnosisStore(config.store.path), wal=wal, clock=lambda: now[0])
    wal.start()
    stage.start()
    fresh, old = make_runs(2, seed=5)
    try:
        _send(stage, request([*old.steps, old.root]))
        assert stage.sweep() == 1  # diagnosed and retained until 1030
        now[0] += 20
        _send(stage, request([*fresh.steps, fresh.root]))
        assert stage.sweep() == 1  # retained until 1050
        now[0] += 15  # old is past its retention, fresh is not; the next sweep has not come
        assert _rejected(stage, _late(old)) == 1 and stage.get_run(old.trace_id) is None
        assert _rejected(stage, _late(fresh)) == 0 and stage.in_flight == 1
    finally:
        stage.shutdown()
        wal.shutdown()


def test_runs_past_retention_before_a_sigkill_name_their_late_spans_rejected_at_once_after_the_restart(tmp_path):
    """Runs diagnosed and past retention before a SIGKILL come back from the log already past
    it: a late span sent the moment the processor is ready is rejected, however soon that is."""
    config = ProcessorConfig(assembly={"grace_seconds": 0, "retention_seconds": 30, "sweep_interval_seconds": 3600},
                             store={"path": str(tmp_path / "store.sqlite")})
    from mast_otel.processors.service.store.diagnoses import DiagnosisStore

    runs = make_runs(6, seed=7)
    old, recent = runs[:3], runs[3:]
    wall = [time.time() - 100]
    metrics = Metrics(config.metrics)
    wal = SpanLog(config.wal, config.wal.resolve_directory(config.store.path), metrics.registry)
    stage = IngestStage(config, metrics, DiagnosisStore(config.store.path), wal=wal, wall_clock=lambda: wall[0])
    wal.start()
    stage.start()
    for run in old:
        _send(stage, request([*run.steps, run.root]))
    stage.sweep()
    wall[0] += 95  # the recent runs arrive 5 s before the SIGKILL, the old ones 100 s before it
    for run in recent:
        _send(stage, request([*run.steps, run.root]))
    stage.sweep()
    _crash(stage, wal)
    metrics2 = Metrics(config.metrics)
    wal2 = SpanLog(config.wal, config.wal.resolve_directory(config.store.path), metrics2.registry)
    stage2 = IngestStage(config, metrics2, DiagnosisStore(config.store.path), wal=wal2)
    wal2.start()
    stage2.start()
    try:
        assert set(stage2._assembler.retained) == {r.trace_id for r in recent}
        assert sum(_rejected(stage2, _late(r)) for r in old) == len(old)
        assert sum(_rejected(stage2, _late(r)) for r in recent) == 0 and stage2.in_flight == len(recent)
    finally:
        stage2.shutdown()
        wal2.shutdown()


def _wal_lines(caplog, level: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.endswith(".wal.log") and r.levelname == level]


def test_a_full_filesystem_turns_readiness_false_frees_the_retained_runs_space_and_ends_when_space_returns(tmp_path, caplog):
    """The log alone fills a small tmpfs: readiness is false and one ERROR line says so; the
    diagnosed runs retained for late spans (retention 600 s) give their space back, so requests are
    taken again at once, with one line, not when the retention ends."""
    from durability import can_mount_tmpfs

    disk = tmp_path / "disk"
    if not can_mount_tmpfs(disk):
        pytest.skip("tmpfs cannot be mounted in this environment")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)], check=True)
    caplog.set_level("INFO")
    config = ProcessorConfig(assembly={"grace_seconds": 0, "retention_seconds": 600, "sweep_interval_seconds": 3600},
                             store={"path": str(tmp_path / "store.sqlite")},
                             wal={"directory": str(disk / "wal"), "segment_bytes": 64 * 1024})
    stage, wal = _stage(config)
    try:
        refused = 0
        for run in make_runs(2000, seed=3):
            receipt = _send(stage, request([*run.steps, run.root]))
            if receipt.refusal is not None:
                assert receipt.refusal.reason == "wal_no_space"
                refused += 1
                if refused == 30:
                    break
        assert refused == 30 and not wal.healthy and stage.admission() is None  # appends are still tried
        assert len(_wal_lines(caplog, "ERROR")) == 1, _wal_lines(caplog, "ERROR")
        stage.sweep()  # every run diagnosed and stored; the retained ones let go of their log space
        assert wal.healthy and stage.in_flight == 0
        assert len(_wal_lines(caplog, "WARNING")) == 1 and "written again" in _wal_lines(caplog, "WARNING")[0]
        late = make_runs(1, seed=4)[0]
        assert _send(stage, request([*late.steps, late.root])).refusal is None
    finally:
        stage.shutdown()
        wal.shutdown()
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_a_read_only_log_folder_turns_readiness_false_with_one_line_and_ends_when_writable_again(tmp_path, caplog):
    """The folder made read-only under a running log (``chattr +i``, which stops root too): no new
    segment, no deletion. Readiness is false with one ERROR line, however many runs settle; once
    the folder is writable again readiness returns at the next check, with one line."""
    directory = tmp_path / "wal"
    directory.mkdir()
    if subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    subprocess.run(["chattr", "-i", str(directory)], check=True)
    caplog.set_level("INFO")
    config = ProcessorConfig(assembly={"grace_seconds": 0, "retention_seconds": 0, "sweep_interval_seconds": 3600},
                             store={"path": str(tmp_path / "store.sqlite")},
                             wal={"directory": str(directory), "segment_bytes": 4096})
    stage, wal = _stage(config)
    runs = make_runs(300, seed=9)
    try:
        subprocess.run(["chattr", "+i", str(directory)], check=True)
        refused = 0
        for run in runs[:200]:
            refused += _send(stage, request([*run.steps, run.root])).refusal is not None
            stage.sweep()  # each run settles and its segment cannot be deleted
        assert refused > 0 and not wal.healthy
        assert len(_wal_lines(caplog, "ERROR")) == 1, _wal_lines(caplog, "ERROR")[:5]
        subprocess.run(["chattr", "-i", str(directory)], check=True)
        stage.sweep()
        assert wal.healthy and len(_wal_lines(caplog, "WARNING")) == 1, _wal_lines(caplog, "WARNING")
        assert all(_send(stage, request([*run.steps, run.root])).refusal is None for run in runs[200:])
        stage.sweep()
        assert len(list(directory.glob("*.wal"))) <= 2  # the segments it could not delete are gone
    finally:
        subprocess.run(["chattr", "-i", str(directory)], capture_output=True)
        stage.shutdown()
        wal.shutdown()
