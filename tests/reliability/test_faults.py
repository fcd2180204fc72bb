"""The fault scenarios of ``benchmarks/faults.py``, smaller: each must hold with exact accounting."""

from __future__ import annotations

import pytest
from faults import disk_full, exporter_down, judge_down, kill


@pytest.mark.timeout(180)
def test_sigkill_mid_stream_loses_nothing(tmp_path):
    report = kill(tmp_path, runs=16)
    assert report["silently_missing"] == 0 and report["lost_reported"] == 0 and report["replayed_spans"] > 0, report
    assert report["outcomes_kept"] == report["outcomes_posted"] > 0, report
    assert report["held"], report


@pytest.mark.timeout(180)
def test_reexport_backend_down_drops_are_bounded_and_counted_then_export_resumes(tmp_path):
    report = exporter_down(tmp_path, runs=40)
    assert report["traces_diagnosed"] == report["traces_acked"], report
    assert report["held"], report


@pytest.mark.timeout(180)
def test_disk_full_degrades_the_store_only(tmp_path):
    report = disk_full(tmp_path, runs=60)
    assert report["store_error_log_lines"] == 1 and report["log_tracebacks"] == 0, report
    assert report["held"], report


@pytest.mark.timeout(180)
def test_judge_provider_down_leaves_rule_diagnoses_unchanged(tmp_path):
    report = judge_down(tmp_path, runs=20)
    assert report["judge_failures"] > 0, report
    assert report["held"], report
