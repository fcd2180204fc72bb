"""The built-in web view in headless Chromium: pages load cleanly and show the API's numbers."""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from tests.tools import require_tool
from tests.demo.support import local_processor

RUNS_PER_MODEL = 5
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def processor(tmp_path_factory):
    """A processor holding diagnoses of a small simulated fleet, sent over real OTLP."""
    from mast_otel.demo.command import Fleet, _tracing, _wait_for_diagnoses
    from mast_otel.demo.models import PROFILES

    with local_processor(tmp_path_factory.mktemp("web")) as server:
        provider = _tracing(server.http_url, capture_content=True)
        fleet = Fleet(list(PROFILES), seed=5)
        for _ in range(RUNS_PER_MODEL * len(PROFILES)):
            fleet.run_next()
        provider.force_flush()
        assert _wait_for_diagnoses(server, fleet.trace_ids) == len(fleet.trace_ids)
        yield server
        provider.shutdown()


@pytest.fixture(scope="module")
def browser():
    require_tool("chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def shots(tmp_path) -> Path:
    """Where screenshots go: ``MAST_OTEL_SCREENSHOT_DIR`` when set (docs), else a temp folder."""
    folder = Path(os.environ.get("MAST_OTEL_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def open_page(browser, url: str):
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    problems: list[str] = []
    page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on("requestfailed", lambda req: problems.append(f"request failed: {req.url}"))
    response = page.goto(url)
    assert response is not None and response.status == 200
    return page, problems


def api_items(server) -> list[dict]:
    return httpx.get(f"{server.http_url}/v1/diagnoses", params={"limit": 1000}).json()["items"]


def test_overview_shows_the_api_numbers(processor, browser, shots):
    from mast_otel.processors.web.summary import decimal, percent, summarize

    page, problems = open_page(browser, f"{processor.http_url}/")
    page.screenshot(path=str(shots / "overview.png"), full_page=True)
    items = api_items(processor)
    api = summarize(SimpleNamespace(model=d["model"], modes=[m["mode"] for m in d["modes"]], fatal=d["fatal"],
                                    outcome=d["outcome"]) for d in items)
    assert len(api) == 3
    for s in api:
        row = page.locator(f'#models tr[data-model="{s.model}"]')
        shown = {f: row.locator(f'[data-field="{f}"]').inner_text().strip()
                 for f in ("runs", "success_rate", "modes_per_failed_run", "fatal_share")}
        assert shown == {"runs": str(s.runs), "success_rate": percent(s.success_rate),
                         "modes_per_failed_run": decimal(s.modes_per_failed_run), "fatal_share": percent(s.fatal_share)}
        for mode, count in s.mode_runs.items():
            cell = page.locator(f'#heatmap tr[data-model="{s.model}"] td[data-mode="{mode}"]')
            assert cell.get_attribute("data-runs") == str(count)
    fatal_links = page.locator("#fatal-runs a").all()
    assert len(fatal_links) == min(15, sum(d["fatal"] for d in items))
    assert page.locator("#mpf-chart rect").count() == 3
    assert not problems, problems


def test_run_page_puts_each_finding_on_its_evidence(processor, browser, shots):
    items = [d for d in api_items(processor) if d["fatal"]]
    diagnosis = max(items, key=lambda d: len(d["modes"]))
    page, problems = open_page(browser, f"{processor.http_url}/runs/{diagnosis['trace_id']}")
    page.screenshot(path=str(shots / "run.png"), full_page=True)
    rows = page.locator("#timeline .tl-row")
    assert rows.count() >= diagnosis["step_count"]
    shown_modes = [b.inner_text() for b in page.locator("#modes .badge").all()]
    assert shown_modes == [m["mode"] for m in diagnosis["modes"]]
    for mode in diagnosis["modes"]:
        flagged = {r.get_attribute("data-span-id") for r in page.locator("#timeline .tl-row").all()
                   if mode["mode"] in [b.inner_text() for b in r.locator(".badge").all()]}
        in_timeline = {r.get_attribute("data-span-id") for r in rows.all()}
        assert flagged == set(mode["evidence_span_ids"]) & in_timeline, mode["mode"]
        assert flagged, f"{mode['mode']} has no evidence on the timeline"
        finding = page.locator(f'[id="{mode["mode"]}"]')
        assert mode["explanations"][0] in finding.inner_text()
    assert not problems, problems


def test_unknown_run_is_a_404(processor):
    assert httpx.get(f"{processor.http_url}/runs/{'0' * 32}").status_code == 404
    assert httpx.get(f"{processor.http_url}/runs/not-a-trace").status_code == 404
    assert re.search(r"<h1>", httpx.get(f"{processor.http_url}/").text)
