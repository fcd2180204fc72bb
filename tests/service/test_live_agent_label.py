"""A run's live detections are counted under the agent its other metrics name.

The Vercel AI SDK recordings (tests/typescript/corpus) streamed through the running processor
as an exporter sends them, spans in the order they ended: the steps come first and the run's
agent span last. The loop is raised live before the agent span arrives; its count must not say
agent "unknown" while ``mast_traces_total`` names the agent (an alert on the live metric would
page about "unknown").
"""

from __future__ import annotations

import json

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from mast_otel.processors import detectors
from tests.frameworks.test_corpus_streaming import requests_of
from tests.service.support import make_config, metric, running, wait_for
from tests.typescript.test_corpus import RECORDINGS

AI_SDK = ("ai-sdk-6", "ai-sdk-7", "ai-sdk-7-legacy", "ai-sdk-7-stream")


def _loop(framework: str):
    (recording,) = [r for r in RECORDINGS if r.framework == framework and r.scenario.name == "loop" and r.variant == "content"]
    return recording


def _agents(server, name: str) -> set[str]:
    text = httpx.get(f"{server.http_url}/metrics").text
    return {s.labels["agent"] for f in text_string_to_metric_families(text) for s in f.samples
            if s.name == name and s.value}


@pytest.mark.parametrize("framework", AI_SDK)
def test_live_detections_carry_the_agent_of_the_runs_other_metrics(tmp_path, framework):
    recording = _loop(framework)
    config = make_config(tmp_path, assembly={"grace_seconds": 0.2})
    with running(config, diagnose=detectors.diagnose, live_detection=detectors.LiveDetection) as server:
        with httpx.Client() as client:
            for line in recording.path.read_text().splitlines():
                for body in requests_of(line, 4):
                    response = client.post(f"{server.http_url}/v1/traces", content=body,
                                           headers={"Content-Type": "application/json"})
                    assert response.status_code == 200
        wait_for(lambda: metric(server, "mast_traces_total") >= 1, timeout=20)
        assert metric(server, "mast_live_detections_total", mode="FM-1.3") >= 1  # the loop was raised live
        assert _agents(server, "mast_live_detections_total") == _agents(server, "mast_traces_total") == {"sre-agent"}


def test_ai_spans_name_the_agent_of_a_loop_raised_before_the_run_ends(tmp_path):
    """The ``ai.*`` spans name their run (``ai.telemetry.functionId``) on every step: the live
    count names the agent while the run is still going (its agent span not yet exported)."""
    doc = json.loads(_loop("ai-sdk-6").path.read_text().splitlines()[0])
    for resource in doc["resourceSpans"]:  # the run's own span stays open: not exported yet
        for scope in resource["scopeSpans"]:
            scope["spans"] = [s for s in scope["spans"] if s.get("parentSpanId")]
    config = make_config(tmp_path, assembly={"grace_seconds": 0.2})
    with running(config, diagnose=detectors.diagnose, live_detection=detectors.LiveDetection) as server:
        for body in requests_of(json.dumps(doc), 4):
            assert httpx.post(f"{server.http_url}/v1/traces", content=body,
                              headers={"Content-Type": "application/json"}).status_code == 200
        wait_for(lambda: metric(server, "mast_live_detections_total", agent="sre-agent", mode="FM-1.3"))
        assert metric(server, "mast_live_detections_total", agent="unknown") == 0
        assert metric(server, "mast_traces_total") == 0  # still going
