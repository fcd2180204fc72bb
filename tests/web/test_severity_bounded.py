"""Severity read from outcomes stays bounded however many models the store holds.

With one group of 14 modes per model, an answer listing every model grew with the store: 48,000
distinct models made ``/v1/severity`` 229 MB and the ``/severity`` page 187 MB. Both now give
every model together and one page of models, most runs with a known outcome first.
"""

from __future__ import annotations

import re
import time

from fastapi import FastAPI
from fastapi.testclient import TestClient

from mast_otel.processors.config import ProcessorConfig
from mast_otel.processors.model import Diagnosis, Finding
from mast_otel.processors.service.api.app import api_router
from mast_otel.processors.service.auth.throttle import AuthThrottle
from mast_otel.processors.service.store.diagnoses import DiagnosisStore
from mast_otel.processors.web.routes import build_router

MODELS = 40_000
BUSY = ("busy-a", "busy-b", "busy-c")


def _runs(now: float):
    """One run per model for ``MODELS`` models, and 30 runs with known outcomes for each busy one."""
    for i in range(MODELS):
        looped = i % 3 == 0
        yield Diagnosis(trace_id=f"{i:032x}", findings=[Finding("FM-1.3", 0.9, "looped", ("a" * 16,))] if looped else [],
                        fatal=False, model=f"model-{i:05d}", outcome="failure" if looped else None,
                        diagnosed_at=now - i), None
    for b, name in enumerate(BUSY):
        for j in range(30 - b):
            failed = j % 2 == 0
            yield Diagnosis(trace_id=f"{b + 1:08x}{j:024x}", findings=[Finding("FM-1.3", 0.9, "looped", ("b" * 16,))] if failed else [],
                            fatal=False, model=name, outcome="failure" if failed else "success", diagnosed_at=now), None


def _client(store: DiagnosisStore) -> TestClient:
    config = ProcessorConfig()
    app = FastAPI()
    app.include_router(api_router(None, config, store, AuthThrottle(config.receiver.auth_failures)))  # type: ignore[arg-type]
    app.include_router(build_router(store, None, config))
    return TestClient(app)


def test_severity_answers_stay_bounded_with_tens_of_thousands_of_models(tmp_path):
    store = DiagnosisStore(tmp_path / "d.sqlite")
    store.save_many(_runs(time.time()))
    client = _client(store)

    answer = client.get("/v1/severity")
    assert answer.status_code == 200
    assert len(answer.content) < 400_000, len(answer.content)  # every model: hundreds of megabytes
    body = answer.json()
    assert body["total_models"] == MODELS + len(BUSY) and (body["limit"], body["offset"]) == (50, 0)
    names = [g["model"] for g in body["groups"]]
    assert len(names) == 51 and names[0] == "(all models)" and names[1:4] == list(BUSY)  # busiest first
    everyone = {m["mode"]: m for m in body["groups"][0]["modes"]}["FM-1.3"]
    failed = -(-MODELS // 3) + sum(-(-(30 - b) // 2) for b in range(3))
    assert (everyone["failed_runs"], everyone["in_failed_runs"]) == (failed, failed)  # all models, not the page
    assert everyone["successful_runs"] == sum((30 - b) // 2 for b in range(3))

    second = client.get("/v1/severity", params={"offset": 50}).json()
    assert not {g["model"] for g in second["groups"][1:]} & set(names[1:])
    assert second["groups"][0] == body["groups"][0]
    assert client.get("/v1/severity", params={"limit": 1000}).status_code == 422
    one = client.get("/v1/severity", params={"model": "model-00003"}).json()
    assert [g["model"] for g in one["groups"]] == ["(all models)", "model-00003"]

    page = client.get("/severity")
    assert page.status_code == 200 and len(page.content) < 400_000, len(page.content)
    tables = re.findall(r'<table class="severity" data-model="([^"]+)"', page.text)
    assert tables[:4] == ["(all models)", *BUSY] and len(tables) == 21
    assert f"{MODELS + len(BUSY)} models" in page.text and 'id="next-models"' in page.text
    later = re.findall(r'<table class="severity" data-model="([^"]+)"', client.get("/severity?page=2").text)
    assert len(later) == 21 and not set(later[1:]) & set(tables[1:])
    chosen = re.findall(r'<table class="severity" data-model="([^"]+)"', client.get("/severity?model=busy-b").text)
    assert chosen == ["(all models)", "busy-b"]
    store.close()
