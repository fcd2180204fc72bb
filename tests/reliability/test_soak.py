"""A few seconds of the soak: overload a real ``mast-otel serve`` subprocess, then reconcile."""

from __future__ import annotations

import pytest
from soak import check, soak


@pytest.mark.timeout(180)
def test_overload_sheds_with_retry_after_recovers_and_loses_nothing(tmp_path):
    report = soak(tmp_path, overload_seconds=5, recovery_seconds=3, senders=8, budget_mb=1, one_sender_runs=40)
    assert check(report) == []
    # The overload really overloaded: the processor refused some requests (and said when to retry).
    assert report["overload"]["statuses"].get(429, 0) > 0
    counts = report["counts"]
    assert counts["spans_acked"] > 0 and counts["spans_unaccounted"] == 0
    assert counts["traces_acked"] == counts["traces_total"] == counts["traces_stored"]
