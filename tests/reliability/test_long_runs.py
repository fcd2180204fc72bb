"""A very long run: its stored step list stays under ``store.max_step_list_bytes`` and says what
it folded, and its page draws at most ``web.timeline_rows`` steps, each fold linking to a page of
the steps it holds. One 3,001-span run (long tool names, every call repeated) sent by the
OpenTelemetry SDK over OTLP/HTTP to the real server, diagnosed by the real detectors."""

from __future__ import annotations

import re
import sqlite3

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from mast_otel.processors.service.server import ProcessorServer
from tests.service.support import emit_run, make_config, wait_for

CALLS = 1500  # a model call and a tool call each, under one agent span
MAX_BYTES = 64 * 1024
ROWS = 100
TOOL = "kubectl_describe_" + "pod_" * 60  # 257 characters


@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("long-run")
    config = make_config(path, store={"max_step_list_bytes": MAX_BYTES}, web={"timeline_rows": ROWS},
                         assembly={"max_spans_per_trace": 5000, "max_bytes_per_trace": 64 * 1024 * 1024})
    with ProcessorServer(config) as server:
        provider = TracerProvider(resource=Resource.create({"service.name": "sre-agent"}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces"),
                                                       max_export_batch_size=512, max_queue_size=4 * CALLS))
        trace_id, ids = emit_run(provider, tools=((TOOL, "same"),) * CALLS, outcome="failure")
        provider.shutdown()
        diagnosis = wait_for(lambda: server.store.get(trace_id), timeout=60)
        assert diagnosis is not None and diagnosis.span_count == 2 * CALLS + 1
        with sqlite3.connect(config.store.path) as db:
            (stored,) = db.execute("SELECT steps FROM run_steps WHERE trace_id = ?", (trace_id,)).fetchone()
        yield server, trace_id, ids, diagnosis, stored


def test_the_stored_step_list_is_capped_and_says_what_it_folded(long_run):
    server, trace_id, ids, diagnosis, stored = long_run
    assert len(stored.encode()) <= MAX_BYTES
    answer = httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}", params={"include": "steps"}).json()
    steps, folds = answer["steps"], answer["steps_folded"]
    assert answer["steps_shortened"] and folds
    assert len(steps) + sum(f["count"] for f in folds) == 2 * CALLS + 1  # every step kept or counted
    kept = [s["span_id"] for s in steps]
    assert kept[0] == ids["agent"] and kept[-1] == ids[f"tool-{CALLS - 1}"]  # how it began and how it ended
    assert diagnosis.attribution is None or diagnosis.attribution.step_span_id in (None, *kept)
    first_evidence = [v.evidence_span_ids[0] for v in diagnosis.verdicts.values() if v.evidence_span_ids]
    assert first_evidence and set(first_evidence) <= set(kept)  # the steps findings point at come first
    assert all(len(s["name"]) <= 201 for s in steps)  # names shortened to fit


def rows_of(html: str) -> list[str]:
    return re.findall(r'<div class="tl-row [^"]*" id="span-([0-9a-f]{16})"', html)


def test_the_run_page_draws_at_most_timeline_rows_and_links_each_fold(long_run):
    server, trace_id, ids, diagnosis, stored = long_run
    url = f"{server.http_url}/runs/{trace_id}"
    html = httpx.get(url).text
    drawn = rows_of(html)
    folded = [int(n) for n in re.findall(r'data-folded="(\d+)"', html)]
    listed = httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}", params={"include": "steps"}).json()
    total = len(listed["steps"]) + sum(f["count"] for f in listed["steps_folded"])
    assert 0 < len(drawn) <= ROWS and len(drawn) + sum(folded) == total
    assert drawn[0] == ids["agent"]
    assert f"{len(drawn)} of {len(listed['steps'])} steps drawn" in html
    assert f"The stored step list keeps {len(listed['steps'])} of {total} steps" in html
    assert "not kept in the stored step list" in html  # the store's own folds, where they were
    first, last = map(int, re.search(r'href="\?steps=(\d+)-(\d+)"', html).groups())
    page = httpx.get(url, params={"steps": f"{first}-{last}"})
    assert page.status_code == 200
    shown = rows_of(page.text)
    assert shown and shown == [s["span_id"] for s in listed["steps"][first - 1:last]][:ROWS]
    assert httpx.get(url, params={"steps": "9-3"}).status_code == 400


def test_folded_steps_are_drawn_as_ranges_one_row_each(long_run):
    """The findings point at steps all along the run, so what the store and the page leave out
    alternates with what they keep; each stretch between two drawn steps is still one row."""
    server, trace_id, ids, diagnosis, stored = long_run
    html = httpx.get(f"{server.http_url}/runs/{trace_id}").text
    order = re.findall(r'<div class="tl-row (tl-fold|role-)', html)
    drawn, folds = order.count("role-"), order.count("tl-fold")
    assert drawn and folds
    assert all(not (a == b == "tl-fold") for a, b in zip(order, order[1:]))  # never two fold rows in a row
    assert folds <= drawn + 1
    listed = httpx.get(f"{server.http_url}/v1/diagnoses/{trace_id}", params={"include": "steps"}).json()
    total = len(listed["steps"]) + sum(f["count"] for f in listed["steps_folded"])
    assert drawn + sum(int(n) for n in re.findall(r'data-folded="(\d+)"', html)) == total  # every step drawn or counted
