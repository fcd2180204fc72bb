"""One model, one name through the running processor: metrics, the API and the web view.

The AI SDK names the snapshot that answered (``gpt-4o-mini-2024-07-18``), the OpenAI Agents
SDK the model asked for (``gpt-4o-mini``): the same model, which by default is one row, one
label value. With ``hints.fold_model_snapshots`` off each snapshot is its own model.
"""

from __future__ import annotations

import httpx
import pytest

from mast_otel.processors import detectors
from tests.service.support import make_config, metric, running, wait_for
from tests.typescript.test_corpus import RECORDINGS

DATED = "gpt-4o-mini-2024-07-18"


def _clean(framework: str):
    (recording,) = [r for r in RECORDINGS if r.framework == framework and r.scenario.name == "clean" and r.variant == "content"]
    return recording


@pytest.mark.parametrize("fold", [True, False], ids=["folded", "off"])
def test_metrics_the_api_and_the_web_view_name_the_model_alike(tmp_path, fold):
    config = make_config(tmp_path, assembly={"grace_seconds": 0.2}, hints={"fold_model_snapshots": fold})
    with running(config, diagnose=detectors.diagnose, live_detection=detectors.LiveDetection) as server:
        with httpx.Client() as client:
            for framework in ("ai-sdk-6", "openai-agents"):
                for line in _clean(framework).path.read_text().splitlines():
                    assert client.post(f"{server.http_url}/v1/traces", content=line,
                                       headers={"Content-Type": "application/json"}).status_code == 200
            wait_for(lambda: metric(server, "mast_traces_total") >= 2, timeout=20)
            overview = client.get(f"{server.http_url}/").text
            listed = client.get(f"{server.http_url}/v1/diagnoses").json()["items"]
            run_pages = [client.get(f"{server.http_url}/runs/{item['trace_id']}").text for item in listed]
        if fold:
            assert metric(server, "mast_traces_total", model="gpt-4o-mini") == 2
            assert metric(server, "mast_traces_total", model=DATED) == 0
            assert {item["model"] for item in listed} == {"gpt-4o-mini"}
            assert DATED not in overview and all(DATED not in page for page in run_pages)
            assert "gpt-4o-mini" in overview
        else:
            assert metric(server, "mast_traces_total", model="gpt-4o-mini") == 1
            assert metric(server, "mast_traces_total", model=DATED) == 1
            assert {item["model"] for item in listed} == {"gpt-4o-mini", DATED}
            assert DATED in overview
