"""The write-ahead log against real ``mast-otel serve`` processes (``benchmarks/durability.py``, smaller)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from durability import (can_mount_tmpfs, corrupt_record, disk_full_injected, disk_full_tmpfs, evicted, folder_deleted,
                        foreign_entries, io_error, late_spans, log_disk_full, log_read_only, restart)
from soak import ServeProcess


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


@pytest.mark.timeout(240)
def test_log_folder_deleted_while_serving_refuses_until_repaired_and_loses_no_acknowledged_run(tmp_path):
    report = folder_deleted(tmp_path, runs=150)
    assert report["ready_while_blocked"] == 503 and report["statuses_while_blocked"] == {"503": 2}, report
    assert report["retry_after_while_blocked"] == "1" and report["refused_wal_io_error"] > 0, report
    assert report["ready_after"] == 200 and report["fault_log_lines"] >= 2 and report["repaired_log_lines"] >= 2, report
    assert report["acked"] == 150 and report["acked_missing_steps"] == 0, report


@pytest.mark.timeout(240)
def test_every_append_failing_with_an_io_error_turns_readiness_false_until_it_passes(tmp_path):
    report = io_error(tmp_path, runs=60)
    assert report["ready_while_failing"] == 503 and report["statuses_while_failing"] == {"503": 2}, report
    assert report["ready_after"] == 200 and report["acked"] == 60 and report["acked_missing_steps"] == 0, report


@pytest.mark.timeout(240)
def test_one_flipped_byte_costs_only_the_runs_of_its_record_and_the_file_is_not_cut(tmp_path):
    report = corrupt_record(tmp_path, runs=100)
    assert report["corrupt_records"] == 1 and report["segment_bytes_after_start"] == report["segment_bytes"], report
    assert report["acked_missing_steps"] <= report["runs_per_record"], report
    assert report["held"], report


@pytest.mark.timeout(240)
def test_foreign_entries_in_the_log_folder_are_ignored_with_a_warning(tmp_path):
    report = foreign_entries(tmp_path, runs=30)
    assert report["started"] and report["foreign_entry_warnings"] == 2, report
    assert report["acked_missing_steps"] == 0, report


@pytest.mark.timeout(300)
def test_late_spans_survive_a_sigkill_merge_after_the_restart_or_are_named_rejected(tmp_path):
    report = late_spans(tmp_path, runs=100)
    assert report["stored_with_both_late_spans"] == 100, report
    assert report["past_retention_named_rejected"] == report["past_retention_late_spans"], report
    assert report["held"], report


@pytest.mark.timeout(240)
def test_runs_evicted_and_revived_lose_no_acknowledged_span_at_a_sigkill(tmp_path):
    report = evicted(tmp_path, runs=150)
    assert report["evictions_before_kill"] > 0, report
    assert report["runs_short_of_an_acked_span"] == 0 and report["acked_spans_missing"] == 0, report


@pytest.mark.timeout(240)
def test_a_process_that_loses_the_race_for_a_log_folder_touches_nothing_in_it(tmp_path):
    """Two processes started at once on one new log folder: one serves, the other exits with the
    one-line error without deleting the folder the winner has just created and locked."""
    for attempt in range(3):
        shared = tmp_path / f"try{attempt}" / "shared.wal"
        pair = [ServeProcess(tmp_path / f"try{attempt}" / name, {"wal": {"directory": str(shared)}}) for name in "ab"]
        outcome: dict[int, str] = {}

        def start(i: int) -> None:
            try:
                pair[i].start()
                outcome[i] = "ready"
            except RuntimeError as exc:
                outcome[i] = str(exc)

        threads = [threading.Thread(target=start, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        try:
            winners = [i for i in range(2) if outcome[i] == "ready"]
            assert len(winners) == 1, outcome
            winner, loser = pair[winners[0]], pair[1 - winners[0]]
            assert loser.proc.returncode == 2 and "in use by another process" in outcome[1 - winners[0]], outcome
            time.sleep(1.0)  # several sweeps: the winner would see a deleted folder here
            assert "deleted or replaced" not in winner.log() and "repaired" not in winner.log(), winner.log()[-2000:]
            assert list(shared.glob("*.wal")) and httpx.get(f"{winner.url}/readyz").status_code == 200
        finally:
            for p in pair:
                p.kill()


@pytest.mark.timeout(240)
def test_log_on_a_full_filesystem_is_not_ready_says_so_once_and_takes_requests_again_once_its_runs_are_stored(tmp_path):
    report = log_disk_full(tmp_path, runs=3000)
    if report is None:
        pytest.skip("tmpfs cannot be mounted in this environment")
    assert report["refused"] >= 30 and report["ready_while_full"] == 503 and report["error_lines_while_full"] == 1, report
    assert report["seconds_until_ready_again"] < 10 and report["accepted_after"] == 100, report
    assert report["error_lines"] == 1 and report["cleared_lines"] == 1, report
    assert report["acked_not_stored"] == 0 and report["refused_but_stored"] == 0 and report["held"], report


@pytest.mark.timeout(240)
def test_log_folder_made_read_only_is_not_ready_says_so_once_and_recovers_when_writable(tmp_path):
    report = log_read_only(tmp_path, runs=200)
    if report is None:
        pytest.skip("chattr +i is not available here")
    assert report["segments_before"] > 2 and report["ready_while_read_only"] == 503, report
    assert report["error_lines_while_read_only"] == 1 and report["error_lines"] == 1 and report["cleared_lines"] == 1, report
    assert report["ready_after"] == 200 and report["accepted_after"] == 100, report
    assert report["acked"] == 200 and report["acked_missing_steps"] == 0 and report["held"], report
