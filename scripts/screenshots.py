"""Take the README's and docs' screenshots of the web view, in one command, from the demo's own runs.

    .venv/bin/python scripts/screenshots.py              # writes docs/img/*.png
    .venv/bin/python scripts/screenshots.py --out DIR    # elsewhere

It starts a processor in-process (SQLite in a temporary folder, free loopback ports), sends it
the runs ``mast-otel demo --once`` sends (the same simulated fleet, seed and run count), adds one
recorded team run (an OpenAI Agents SDK team, from the team corpus), waits until every run is
diagnosed, and photographs each page in headless Chromium (Debian's ``/usr/bin/chromium``, driven
by playwright). Pages are cut at ``MAX_HEIGHT`` pixels so each PNG stays a few hundred kB.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

import httpx

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "img"
TEAM_RUN = ROOT / "tests" / "teams" / "corpus" / "openai-agents-handoffs" / "verifier_overridden.json"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WIDTH, HEIGHT = 1366, 900
MAX_HEIGHT = 2200
# The image files, as the README and docs/ name them: what each must show (a page element that
# must be on it) and a description.
SHOTS = {
    "overview.png": ("#models tr[data-model] >> nth=0", "the overview: per-model table, heatmap, sessions and outcomes"),
    "runs.png": ("#runs tbody tr[data-trace-id] >> nth=0", "the runs of one model with one mode"),
    "run.png": ("#timeline .tl-row >> nth=0", "a run's page: findings on its timeline"),
    "team-run.png": ("#team .lane >> nth=0", "a team run's page: one lane per agent and its handoffs"),
}


@contextmanager
def demo_processor(folder: Path) -> Iterator[str]:
    """A processor holding the diagnoses of the demo's runs and one team run; yields its URL."""
    from mast_otel.demo.command import DEFAULT_RUNS_SIMULATED, Fleet, _tracing, _wait_for_diagnoses
    from mast_otel.demo.models import PROFILES
    from mast_otel.processors.config import ProcessorConfig
    from mast_otel.processors.service.server import ProcessorServer

    server = ProcessorServer(ProcessorConfig(
        receiver={"host": "127.0.0.1", "http_port": 0, "grpc_enabled": False},
        store={"path": folder / "diagnoses.sqlite"},
        assembly={"grace_seconds": 0.2, "sweep_interval_seconds": 0.1},
    ))
    server.start()
    provider = _tracing(server.http_url, capture_content=True)
    try:
        fleet = Fleet(list(PROFILES), seed=7)  # mast-otel demo's default seed
        for _ in range(DEFAULT_RUNS_SIMULATED * len(PROFILES)):
            fleet.run_next()
        provider.force_flush()
        if _wait_for_diagnoses(server, fleet.trace_ids) != len(fleet.trace_ids):
            raise SystemExit("screenshots: not every demo run was diagnosed")
        yield server.http_url
    finally:
        provider.shutdown()
        server.stop()


def post_team_run(url: str) -> str:
    """Send the recorded team run as its exporter sent it; its trace id once it is diagnosed."""
    body = TEAM_RUN.read_text().splitlines()[0]
    httpx.post(f"{url}/v1/traces", content=body, headers={"Content-Type": "application/json"}).raise_for_status()
    trace_id = next(s["traceId"] for rs in json.loads(body)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"])
    deadline = time.monotonic() + 60
    while httpx.get(f"{url}/v1/diagnoses/{trace_id}").status_code != 200:
        if time.monotonic() > deadline:
            raise SystemExit("screenshots: the team run was not diagnosed")
        time.sleep(0.1)
    return str(trace_id)


def demo_pages(url: str) -> dict[str, str]:
    """The URL of each screenshot's page of the demo's runs: the fatal-rated run with the most modes."""
    items = httpx.get(f"{url}/v1/diagnoses", params={"limit": 1000}).json()["items"]
    richest = max((d for d in items if d["fatal"]), key=lambda d: (len(d["modes"]), d["trace_id"]))
    mode = richest["modes"][0]["mode"]
    return {
        "overview.png": f"{url}/",
        "runs.png": f"{url}/runs?{urlencode({'model': richest['model'], 'mode': mode})}",
        "run.png": f"{url}/runs/{richest['trace_id']}",
    }


def photograph(urls: dict[str, str], out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for name, page_url in urls.items():
                page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
                response = page.goto(page_url)
                if response is None or response.status != 200:
                    raise SystemExit(f"screenshots: {page_url} answered {response.status if response else 'nothing'}")
                page.wait_for_load_state("networkidle")
                page.locator(SHOTS[name][0]).wait_for(state="visible", timeout=10_000)  # the page shows what it should
                height = min(int(page.evaluate("document.documentElement.scrollHeight")), MAX_HEIGHT)
                page.screenshot(path=str(out / name), full_page=True,
                                clip={"x": 0, "y": 0, "width": WIDTH, "height": height})
                page.close()
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=IMAGES, help=f"folder for the PNGs (default {IMAGES.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).is_file():
        raise SystemExit(f"screenshots: no Chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mast-otel-screenshots-") as folder, demo_processor(Path(folder)) as url:
        photograph(demo_pages(url), args.out)  # before the team run joins the overview
        photograph({"team-run.png": f"{url}/runs/{post_team_run(url)}"}, args.out)
    for name in SHOTS:
        print(f"{args.out / name}: {(args.out / name).stat().st_size // 1024} kB, {SHOTS[name][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
