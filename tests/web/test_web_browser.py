"""The built-in web view in headless Chromium: pages load cleanly and show the API's numbers."""

from __future__ import annotations

import base64
import json
import os
import re
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from tests.service.support import wait_for
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
    failed = [d for d in items if d["outcome"] == "failure"]
    assert page.locator("#failed-runs a[href^='/runs/']").count() == min(15, len(failed))
    assert page.locator("#mpf-chart rect").count() == 3
    assert page.locator("#legend dt").count() >= 8
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


SPAN_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{16}(?![0-9a-f])")


def test_run_page_names_steps_and_says_what_to_do_under_each_finding(processor, browser):
    """The "went wrong at" line and the evidence read as steps ("#3 chat gpt-4o-mini"), never span ids; under each
    finding, its mode's definition, guard and settings, and a link that opens the mode's section."""
    from mast_otel.processors import taxonomy
    from mast_otel.processors.what_to_do import what_to_do

    items = [d for d in api_items(processor) if d["attribution"] and d["attribution"]["step_span_id"]]
    diagnosis = max(items, key=lambda d: len(d["modes"]))
    detail = httpx.get(f"{processor.http_url}/v1/diagnoses/{diagnosis['trace_id']}").json()
    page, problems = open_page(browser, f"{processor.http_url}/runs/{diagnosis['trace_id']}")
    who = detail["attribution"]
    step = page.locator('[data-field="attribution-step"]')
    assert step.inner_text() == who["step_label"] and re.fullmatch(r"#\d+ (chat|tool) \S.*", who["step_label"])
    assert not SPAN_ID.search(page.locator("#attribution").inner_text())
    step.click()  # the label still leads to the step on the timeline
    assert page.evaluate("location.hash") == f"#span-{who['step_span_id']}"
    numbered = page.locator(f'#timeline [data-span-id="{who["step_span_id"]}"] .step-no').inner_text()
    assert who["step_label"].startswith(numbered + " ")  # the same number as the timeline shows
    for mode in detail["modes"]:
        finding = page.locator(f'.finding[id="{mode["mode"]}"]')
        evidence = [a.inner_text() for a in finding.locator(".evidence a").all()]
        assert evidence and evidence == mode["evidence_steps"][:len(evidence)], mode["mode"]
        assert not [e for e in evidence if SPAN_ID.search(e)], evidence
        advice = finding.locator(f'[data-what-to-do="{mode["mode"]}"]')
        assert advice.is_visible()
        todo = what_to_do(mode["mode"])
        text = advice.inner_text()
        assert todo.description in text and todo.prevention in text
        assert [g.inner_text() for g in advice.locator("[data-guard-name]").all()] == list(todo.guards)
        assert [c.inner_text() for c in advice.locator("[data-setting]").all()] == list(todo.settings)
    mode = detail["modes"][0]["mode"]
    page.locator(f'.finding[id="{mode}"] [data-field="mode-docs"]').click()
    page.wait_for_url(f"**/modes#{mode}")
    section = page.locator(f'[id="{mode}"]')
    assert section.is_visible() and taxonomy.get(mode).definition in section.inner_text()
    assert page.locator(".finding[data-mode]").count() == len(taxonomy.MODE_IDS)
    assert not problems, problems


def api_count(server, **filters) -> int:
    return httpx.get(f"{server.http_url}/v1/diagnoses", params={**filters, "limit": 1}).json()["total"]


def test_heatmap_cell_leads_to_its_runs_and_on_to_a_run(processor, browser, shots):
    page, problems = open_page(browser, f"{processor.http_url}/")
    cell = page.locator('#heatmap td.cell:not([data-runs="0"])').first
    model = cell.locator("xpath=..").get_attribute("data-model")
    mode = cell.get_attribute("data-mode")
    expected = api_count(processor, model=model, mode=mode)
    assert int(cell.get_attribute("data-runs")) == expected
    cell.locator("a").click()
    page.wait_for_url("**/runs?**")
    assert f"model={model}" in page.url and f"mode={mode}" in page.url
    rows = page.locator("#runs tbody tr[data-trace-id]")
    assert rows.count() == min(expected, 50)
    page.screenshot(path=str(shots / "runs.png"), full_page=True)
    assert all(mode in [b.inner_text() for b in r.locator(".badge").all()] for r in rows.all())
    trace_id = rows.first.get_attribute("data-trace-id")
    rows.first.locator("a[href^='/runs/']").click()
    page.wait_for_url(f"**/runs/{trace_id}")
    assert mode in [b.inner_text() for b in page.locator("#modes .badge").all()]
    # a badge on the run page's finding leads to the other runs with that mode
    page.locator(f'[id="{mode}"] a[href^="/runs?"]').click()
    page.wait_for_url("**/runs?**")
    assert page.locator("#runs tbody tr[data-trace-id]").count() == min(api_count(processor, model=model, mode=mode), 50)
    assert not problems, problems


def test_unknown_run_is_a_404(processor):
    assert httpx.get(f"{processor.http_url}/runs/{'0' * 32}").status_code == 404
    assert httpx.get(f"{processor.http_url}/runs/not-a-trace").status_code == 404
    assert re.search(r"<h1>", httpx.get(f"{processor.http_url}/").text)


def decoded_pixels(browser, png: bytes) -> list[tuple[int, int, int]]:
    """A screenshot's pixels, decoded by the browser itself (a canvas), as RGB tuples."""
    page = browser.new_page()
    data = page.evaluate("""async (src) => {
        const img = new Image(); img.src = src; await img.decode();
        const canvas = document.createElement('canvas'); canvas.width = img.width; canvas.height = img.height;
        const ctx = canvas.getContext('2d'); ctx.drawImage(img, 0, 0);
        return Array.from(ctx.getImageData(0, 0, img.width, img.height).data);
    }""", "data:image/png;base64," + base64.b64encode(png).decode())
    page.close()
    return [tuple(data[i:i + 3]) for i in range(0, len(data), 4)]


def css_rgb(text: str) -> tuple[int, int, int]:
    r, g, b = (int(float(x)) for x in re.findall(r"[\d.]+", text)[:3])
    return r, g, b


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG contrast ratio of two sRGB colours."""
    def luminance(c):
        lin = [(v / 255) / 12.92 if v / 255 <= 0.03928 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in c]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_timeline_labels_are_readable(processor, browser):
    """Under each step number and step name, the painted colour (the most common pixel of the
    label's screenshot) must contrast with the label's text colour, and the text must be drawn."""
    diagnosis = max(api_items(processor), key=lambda d: d["step_count"])
    page, problems = open_page(browser, f"{processor.http_url}/runs/{diagnosis['trace_id']}")
    labels = page.locator("#timeline .step-no").all()[:6] + page.locator("#timeline .tl-label strong").all()[:6]
    assert len(labels) >= 8
    for label in labels:
        text = css_rgb(label.evaluate("el => getComputedStyle(el).color"))
        pixels = decoded_pixels(browser, label.screenshot())
        under = Counter(pixels).most_common(1)[0][0]
        assert contrast(text, under) >= 4.5, (label.inner_text(), text, under)
        assert min(sum(abs(p - t) for p, t in zip(px, text)) for px in pixels) < 90, label.inner_text()
    axis = [b.inner_text() for b in page.locator("#time-axis b").all()]
    assert re.fullmatch(r"0(\.0+)? (ns|µs|ms|s)|0 min 00 s", axis[0]) and len(set(axis)) == len(axis) == 5, axis
    bar = page.locator("#timeline .tl-bar .bar").nth(1)
    assert re.search(r"starts \+[\d.]+ (ms|s), takes [\d.]+ (ms|s)", bar.get_attribute("title"))
    steps = page.locator('[data-field="step_count"]').inner_text()
    budget_finding = [e for m in diagnosis["modes"] for e in m["explanations"] if re.search(r"took \d+ steps", e)]
    if budget_finding:
        assert re.search(r"took (\d+) steps", budget_finding[0]).group(1) == steps.split()[0]
    assert not problems, problems


@pytest.fixture
def locked_processor(tmp_path):
    """A processor with an API token, holding a few runs."""
    from tests.service.support import emit_run, make_config, provider_for, running, wait_for
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    with running(make_config(tmp_path, receiver={"api_token": TOKEN})) as server:
        provider = provider_for(OTLPSpanExporter(endpoint=f"{server.http_url}/v1/traces"))
        ids = [emit_run(provider, tools=(("kubectl_get", "a"),) * 3, outcome="failure")[0] for _ in range(3)]
        wait_for(lambda: all(server.store.get(t) for t in ids))
        yield server
        provider.shutdown()


TOKEN = "web-view-t0ken"


def test_log_in_with_the_token(locked_processor, browser):
    url = locked_processor.http_url
    assert httpx.get(f"{url}/v1/diagnoses").status_code == 401
    assert httpx.get(f"{url}/v1/diagnoses", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    page, problems = open_page(browser, f"{url}/runs?outcome=failure")
    assert "/login?next=" in page.url
    page.fill("input[name=token]", "not-the-token")
    page.click("#login button")
    assert page.locator("#login-error").is_visible()
    page.fill("input[name=token]", TOKEN)
    page.click("#login button")
    page.wait_for_url("**/runs?outcome=failure")
    assert page.locator("#runs tbody tr[data-trace-id]").count() == 3
    cookie = next(c for c in page.context.cookies() if c["name"] == "mast_otel_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and not cookie["secure"]  # plain http here
    assert TOKEN not in cookie["value"]
    page.locator("#runs a[href^='/runs/']").first.click()
    assert [p for p in problems if "401" not in p] == []  # only the wrong token's answer failed
    page.locator("text=this diagnosis as JSON").click()  # the API takes the session too
    assert '"trace_id"' in page.content()
    page.go_back()
    page.click("header form button")  # log out
    page.wait_for_url("**/login")
    assert page.goto(f"{url}/").url.startswith(f"{url}/login")


def test_api_docs_work_offline(processor, browser):
    page = browser.new_page()
    outside: list[str] = []

    def only_local(route):
        if route.request.url.startswith(processor.http_url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_local)
    failed: list[str] = []
    page.on("requestfailed", lambda req: failed.append(req.url))
    assert page.goto(f"{processor.http_url}/docs").status == 200
    page.wait_for_selector(".opblock-summary-path", timeout=15_000)
    paths = {el.inner_text().strip() for el in page.locator(".opblock-summary-path").all()}
    assert {"/v1/diagnoses", "/v1/severity"} <= {p.replace("\u200b", "") for p in paths}
    assert not outside and not failed, (outside, failed)


def test_a_team_run_page_has_a_lane_per_agent_with_its_handoffs(processor, browser, shots):
    """A recorded team run (OpenAI Agents handoffs through OpenInference) posted as its exporter sent it."""
    from tests.teams.corpus_files import CORPUS

    body = (CORPUS / "openai-agents-handoffs" / "verifier_overridden.json").read_text().splitlines()[0]
    response = httpx.post(f"{processor.http_url}/v1/traces", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 200
    trace_id = next(s["traceId"] for rs in json.loads(body)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"])
    diagnosis = wait_for(lambda: (r := httpx.get(f"{processor.http_url}/v1/diagnoses/{trace_id}")).status_code == 200
                         and r.json(), timeout=60)
    page, problems = open_page(browser, f"{processor.http_url}/runs/{trace_id}")
    page.screenshot(path=str(shots / "team-run.png"), full_page=True)
    lanes = [lane.get_attribute("data-agent") for lane in page.locator("#team .lane").all()]
    assert lanes == ["coordinator", "operator", "verifier"]
    handoffs = [h.get_attribute("data-handoff") for h in page.locator("#team .handoff").all()]
    assert sorted(handoffs) == ["coordinator → operator", "coordinator → verifier", "operator → coordinator",
                                "verifier → coordinator"]
    assert diagnosis["attribution"]["agent"] == "coordinator"
    went_wrong = page.locator('#team .lane[data-agent="coordinator"] .badge')
    assert went_wrong.count() == 1 and "went wrong" in went_wrong.inner_text()
    assert not problems, problems
