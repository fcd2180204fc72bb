"""The write-ahead log against real ``mast-otel serve`` processes (``benchmarks/durability.py``, smaller)."""

from __future__ import annotations

import pytest
from durability import can_mount_tmpfs, disk_full_injected, disk_full_tmpfs, restart


@pytest.mark.timeout(240)
def test_sigkill_then_restart_recovers_every_run_in_flight_whole(tmp_path):
    report = restart(tmp_path, runs=200)
    assert report["replayed_spans"] == report["spans_sent_before_kill"], report
    assert report["in_flight_after_restart"] == 200, report
    assert report["diagnosed_whole"] == 200 and report["traces_total_after_restart"] == 200, report
    assert report["held"], report


@pytest.mark.timeout(240)
def test_log_failing_like_a_full_disk_then_sigkill_every_acknowledged_run_is_stored(tmp_path):
    report = disk_full_injected(tmp_path, runs=300, budget_bytes=150_000)
    assert report["refused"] > 0 and report["wal_append_errors_before_kill"]["no_space"] == report["refused"], report
    assert report["acked_not_stored"] == 0 and report["refused_but_stored"] == 0, report
    assert report["held"], report


@pytest.mark.timeout(240)
def test_full_tmpfs_then_sigkill_every_acknowledged_run_is_stored(tmp_path):
    if not can_mount_tmpfs(tmp_path / "probe"):
        pytest.skip("tmpfs cannot be mounted in this environment")
    report = disk_full_tmpfs(tmp_path, runs=3000)
    assert report is not None and report["refused"] > 0, report
    assert report["acked_not_stored"] == 0 and report["refused_but_stored"] == 0, report
    assert report["held"], report
