"""The README's TypeScript quick start, run as a user would: under Node, with the packages its
install line names (pinned by ``tests/typescript/quickstart/package-lock.json``, installed with
``npm ci``), against the stub model and a real processor it exports to over OTLP/HTTP."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.demo.support import local_processor
from tests.frameworks.harness.stub_model import Answer, Call, Script, StubModel
from tests.test_readme import BLOCKS
from tests.tools import IN_CI

QUICKSTART = Path(__file__).parent / "quickstart"
NODE = shutil.which("node")


def quickstart_blocks() -> tuple[str, str]:
    """The README's TypeScript install line and program."""
    [install] = [b.code for b in BLOCKS if "typescript-install" in b.directives]
    [program] = [b.code for b in BLOCKS if "typescript" in b.directives and b.lang == "ts"]
    return install, program


def test_the_lock_file_pins_what_the_readme_installs():
    install, _ = quickstart_blocks()
    wanted = dict(re.findall(r"(@?[\w./-]+?)@([\w.]+)(?=\s|$)", install.split("npm install", 1)[1]))
    pinned = json.loads((QUICKSTART / "package.json").read_text())["dependencies"]
    assert set(pinned) == set(wanted)
    assert all(pinned[name] == major or pinned[name].startswith(major + ".") for name, major in wanted.items()), (pinned, wanted)


@pytest.fixture(scope="module")
def installed():
    if NODE is None or shutil.which("npm") is None:  # the machines CI runs on carry Node.js 20 and npm
        message = "the TypeScript quick start needs node (20 or later) and npm on PATH"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    installed_lock = QUICKSTART / "node_modules" / ".package-lock.json"
    if not installed_lock.is_file() or installed_lock.stat().st_mtime < (QUICKSTART / "package-lock.json").stat().st_mtime:
        done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=QUICKSTART, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    return QUICKSTART


def test_the_quick_start_is_diagnosed(installed, tmp_path):
    _, program = quickstart_blocks()
    script = installed / "quickstart.mjs"
    script.write_text(program)
    with StubModel() as stub, local_processor(tmp_path) as processor:
        stub.load(Script([Call("get_pods", {"namespace": "shop"}), Answer("checkout-7d9f is Running.")]))
        env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        env.update(OPENAI_BASE_URL=stub.base_url, OPENAI_API_KEY="x", OTEL_EXPORTER_OTLP_ENDPOINT=processor.http_url)
        done = subprocess.run([NODE, str(script)], cwd=installed, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "checkout-7d9f is Running." in done.stdout
        deadline = time.monotonic() + 30
        while not (items := httpx.get(f"{processor.http_url}/v1/diagnoses").json()["items"]):
            assert time.monotonic() < deadline, "no diagnosis arrived"
            time.sleep(0.1)
    [diagnosis] = items
    assert diagnosis["agent"] == "sre-agent" and diagnosis["service_name"] == "sre-agent"
    assert diagnosis["step_count"] == 3, diagnosis  # model call, get_pods, model call
    assert diagnosis["findings"] == []
