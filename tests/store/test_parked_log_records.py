"""Log records parked in the store for the replica that holds their run: taken once, in order, by trace."""

from __future__ import annotations

import json

from mast_otel.processors.service.store.diagnoses import DiagnosisStore


def test_parked_records_are_taken_once_by_trace_in_the_order_they_were_parked(tmp_path):
    store = DiagnosisStore(tmp_path / "store.sqlite")
    a, b = "a" * 32, "b" * 32
    first, second = json.dumps(["gen_ai.user.message", {"content": "hi"}]), json.dumps(["gen_ai.choice", {"index": 0}])
    store.park_log_records([(a, "1" * 16, first), (b, "2" * 16, second)])
    store.park_log_records([(a, "3" * 16, second)])
    assert store.take_parked_log_records([a, "c" * 32]) == {a: [("1" * 16, first), ("3" * 16, second)]}
    assert store.take_parked_log_records([a]) == {}
    assert store.take_parked_log_records([b]) == {b: [("2" * 16, second)]}
    store.close()
