"""SIGTERM drains: while `mast-otel serve` flushes and stops, new requests get 503 with
Retry-After (reason ``shutting_down``), never a refused connection, and every run acknowledged
before is stored. The re-export backend accepts connections and never answers, so the final
drain of its queue keeps the process stopping for seconds: the window a client must be told
"come back later" rather than "nobody is here"."""

from __future__ import annotations

import socket

import httpx
import pytest
from soak import RunFactory, ServeProcess, post_runs, scrape, stored_total, total, wait_for

from mast_otel.processors.service.store.diagnoses import DiagnosisStore

PROTOBUF = {"Content-Type": "application/x-protobuf"}


@pytest.mark.timeout(180)
def test_sigterm_answers_503_until_the_listener_closes_and_loses_nothing(tmp_path):
    with socket.socket() as silent:  # accepts connections (the backlog), never reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}/v1/traces"
        serve = ServeProcess(tmp_path, {"exporters": {"otlp": [{"endpoint": endpoint, "timeout_seconds": 5, "max_attempts": 1}]}})
        factory = RunFactory(2)
        with serve:
            sent = post_runs(serve.url, factory, 8)
            assert wait_for(lambda: stored_total(serve.url) >= len(sent.traces_acked), 30)
            serve.proc.terminate()
            acked_late, first_refusal = set(), None
            with httpx.Client(timeout=10) as client:
                while first_refusal is None and serve.proc.poll() is None:
                    body, trace_id, _ = factory.run()
                    try:
                        answer = client.post(f"{serve.url}/v1/traces", content=body, headers=PROTOBUF)
                    except httpx.TransportError as exc:
                        first_refusal = exc
                        break
                    if answer.status_code == 200:
                        acked_late.add(trace_id)  # before the signal was handled
                    else:
                        first_refusal = answer
                assert isinstance(first_refusal, httpx.Response), f"the first refusal after SIGTERM was {first_refusal!r}"
                assert first_refusal.status_code == 503 and first_refusal.headers["retry-after"] == "1"
                api = client.get(f"{serve.url}/v1/diagnoses")  # the listener is still there, for every route
                assert api.status_code == 503 and api.json()["reason"] == "shutting_down" and "retry-after" in api.headers
                assert client.get(f"{serve.url}/healthz").status_code == 200
                assert client.get(f"{serve.url}/readyz").status_code == 503
                assert total(scrape(serve.url), "mast_ingest_refused_requests_total", reason="shutting_down") >= 1
            assert serve.proc.wait(60) == 0
    store = DiagnosisStore(tmp_path / "store.sqlite")
    try:
        missing = [t for t in sent.traces_acked | acked_late if store.get(t) is None]
    finally:
        store.close()
    assert not missing, f"{len(missing)} acknowledged runs not stored"
