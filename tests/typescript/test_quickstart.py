"""The README's TypeScript quick start, run as a user would: under Node, with the packages its
install line names (pinned by ``tests/typescript/quickstart/package-lock.json``, installed with
``npm ci``), against the stub model and a real processor it exports to over OTLP/HTTP."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.demo.support import local_processor
from tests.frameworks.harness.stub_model import Answer, Call, Script, StubModel
from tests.test_readme import BLOCKS, README
from tests.tools import IN_CI

QUICKSTART = Path(__file__).parent / "quickstart"
NODE = shutil.which("node")


def quickstart_blocks() -> tuple[str, str]:
    """The README's TypeScript install line and program."""
    [install] = [b.code for b in BLOCKS if "typescript-install" in b.directives]
    [program] = [b.code for b in BLOCKS if "typescript" in b.directives]
    return install, program


def quickstart_file_and_command() -> tuple[str, list[str], dict[str, str]]:
    """The file name the README saves the program as, and its run command (argv, environment)."""
    [block] = [b for b in BLOCKS if "typescript" in b.directives]
    [run] = [b.code.strip() for b in BLOCKS if "typescript-run" in b.directives]
    words = shlex.split(run)
    env = dict(w.split("=", 1) for w in words if re.fullmatch(r"[A-Z_]+=\S*", w))
    return block.directives["file"], [w for w in words if w.split("=", 1)[0] not in env], env


def test_the_readme_names_a_file_node_runs_and_the_node_version_the_packages_need():
    name, argv, env = quickstart_file_and_command()
    assert name.endswith((".mjs", ".js")) and argv == ["node", name], (name, argv)  # node refuses .ts files
    assert set(env) == {"OTEL_EXPORTER_OTLP_ENDPOINT"}
    readme = README.read_text()
    stated = re.search(r"need Node\.js (\d+) or later", readme)
    assert stated, "the README states no Node.js version for the TypeScript quick start"
    lock = json.loads((QUICKSTART / "package-lock.json").read_text())["packages"]
    needed = max(int(m) for p in lock.values() for m in re.findall(r">=\s*(\d+)", (p.get("engines") or {}).get("node", "")))
    assert int(stated.group(1)) == needed, (stated.group(0), needed)


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
    """The README's file, saved under the name it gives and run with its command, with no OpenAI
    key: ``OPENAI_BASE_URL`` points it at the stub model."""
    _, program = quickstart_blocks()
    name, argv, readme_env = quickstart_file_and_command()
    script = installed / name
    script.write_text(program)
    with StubModel() as stub, local_processor(tmp_path) as processor:
        stub.load(Script([Call("get_pods", {"namespace": "shop"}), Answer("checkout-7d9f is Running.")]))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
        env.update({k: v.replace("http://localhost:4318", processor.http_url) for k, v in readme_env.items()})
        env.update(OPENAI_BASE_URL=stub.base_url)
        done = subprocess.run([NODE if argv[0] == "node" else argv[0], *argv[1:]], cwd=installed, env=env,
                              capture_output=True, text=True, timeout=120)
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


@contextmanager
def failing_model() -> Iterator[tuple[str, list[str]]]:
    """An OpenAI-compatible server whose chat completions all fail with HTTP 500 (base URL, paths called)."""
    calls: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            calls.append(self.path)
            payload = json.dumps({"error": {"message": "the model server is down", "type": "server_error"}}).encode()
            self.send_response(500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", calls
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_a_run_whose_model_call_fails_is_still_diagnosed(installed, tmp_path):
    """The run a user most wants diagnosed is the one that failed: when the model call throws, the
    README's program still exports its spans before exiting, and the processor diagnoses the run."""
    _, program = quickstart_blocks()
    name, argv, readme_env = quickstart_file_and_command()
    script = installed / name
    script.write_text(program)
    with failing_model() as (base_url, calls), local_processor(tmp_path) as processor:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
        env.update({k: v.replace("http://localhost:4318", processor.http_url) for k, v in readme_env.items()})
        env.update(OPENAI_BASE_URL=base_url)
        done = subprocess.run([NODE if argv[0] == "node" else argv[0], *argv[1:]], cwd=installed, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode != 0 and "the model server is down" in done.stderr, (done.returncode, done.stderr[-2000:])
        assert calls and all(path.endswith("/chat/completions") for path in calls), calls
        deadline = time.monotonic() + 30
        while not (items := httpx.get(f"{processor.http_url}/v1/diagnoses").json()["items"]):
            assert time.monotonic() < deadline, "the failed run never reached the processor"
            time.sleep(0.1)
    [diagnosis] = items
    assert diagnosis["agent"] == "sre-agent" and diagnosis["service_name"] == "sre-agent", diagnosis
    assert diagnosis["step_count"] == 1 and diagnosis["model"] == "gpt-4o-mini", diagnosis  # the failed model call
