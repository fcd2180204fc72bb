"""Every command and code sample in the README runs, against a real processor started here.

Each ``bash``/``python`` block is preceded by a ``<!-- readme-test: ... -->`` marker that says
how it is exercised:

- ``ci``: the two commands at the top, which CI itself runs (``.ci/run`` runs ``scripts/test``,
  which installs the package and runs this suite; the demo runs in ``run`` blocks below);
- ``run``: executed as is (``expect-diagnoses=N``: the processor must diagnose N more runs);
- ``server``: a long-running server, started, checked ready, then stopped with SIGTERM;
- ``with-server``: commands that query a running processor (pointed at the test's);
- ``install``: an extra package a sample needs; not run, but the samples' imports are checked
  against what the README's install commands provide.

A docs page's quick start that runs as it is carries the same marker as ``<!-- docs-test: ... -->``
(``run`` and ``with-server`` blocks run here the same way).

The test processor listens on a free port; ``localhost:4318`` in a block is rewritten to it and
``OTEL_EXPORTER_OTLP_ENDPOINT`` points at it, so nothing binds a fixed port. ``.venv/bin/`` (where
the README installs) is rewritten to the bin folder of the Python running the tests, which is that
same ``.venv`` under ``scripts/test``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.demo.support import local_processor

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CI_COMMANDS = {
    'python3 -m venv .venv && .venv/bin/pip install -q -e ".[all]" && .venv/bin/mast-otel demo',
    "scripts/test",
}
FREE_PORTS = {"mast-otel demo": "mast-otel demo --port 0 --grpc-port 0"}
_MARKER = re.compile(r"<!--\s*(?:readme|docs)-test:\s*(.*?)\s*-->")
_FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass
class Block:
    lang: str
    code: str
    line: int
    directives: dict[str, str]

    @property
    def id(self) -> str:
        return f"{self.lang}@{self.line}"


def readme_blocks(text: str) -> list[Block]:
    blocks, marker, lines, i = [], None, text.splitlines(), 0
    while i < len(lines):
        m = _MARKER.search(lines[i])
        fence = _FENCE.match(lines[i])
        if m:
            marker = dict((part.split("=", 1) + [""])[:2] for part in (p.strip() for p in m.group(1).split(",")) if part)
        elif fence:
            start = i
            i += 1
            body = []
            while not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            blocks.append(Block(fence.group(1), "\n".join(body) + "\n", start + 1, marker or {}))
            marker = None
        elif lines[i].strip():
            marker = None
        i += 1
    return blocks


BLOCKS = readme_blocks(README.read_text())
COMMANDS = [b for b in BLOCKS if b.lang in ("bash", "sh", "shell", "python")]
# The docs pages' quick starts that run as they are, marked ``<!-- docs-test: run -->`` the same way.
DOC_COMMANDS = [(page, b) for page in sorted((ROOT / "docs").rglob("*.md")) for b in readme_blocks(page.read_text())
                if ("run" in b.directives or "with-server" in b.directives) and b.lang in ("bash", "python")]


def test_every_command_and_code_sample_is_marked():
    unmarked = [b.id for b in COMMANDS if not b.directives]
    assert not unmarked, f"README blocks without a readme-test marker: {unmarked}"
    assert len(COMMANDS) >= 8


def test_the_two_top_commands_are_the_ones_ci_runs():
    ci = [b for b in COMMANDS if "ci" in b.directives]
    assert {b.code.strip() for b in ci} == CI_COMMANDS
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()
    assert "pytest" in (ROOT / "scripts" / "test").read_text()


def test_the_test_command_says_it_needs_root_and_how_long_it_takes():
    """scripts/test installs Debian packages (root or sudo) and runs for minutes: say both before it runs."""
    ci = [b for b in COMMANDS if "ci" in b.directives and "scripts/test" in b.code]
    text = README.read_text().splitlines()
    before = " ".join(text[max(0, ci[0].line - 6):ci[0].line])
    assert "root" in before and re.search(r"about \d+ minutes", before), before


@pytest.fixture(scope="module")
def processor(tmp_path_factory):
    with local_processor(tmp_path_factory.mktemp("readme")) as server:
        yield server


def _env(processor) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    bin_dir = str(Path(sys.executable).parent)
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", LITELLM_LOCAL_MODEL_COST_MAP="True",
               OTEL_EXPORTER_OTLP_ENDPOINT=processor.http_url, OPENAI_API_KEY="sk-readme-test-not-used")
    return env


def _localize(code: str, processor) -> str:
    code = code.replace("http://localhost:4318", processor.http_url)
    code = re.sub(r"(?<![\w/])\.venv/bin/", f"{Path(sys.executable).parent}/", code)  # the README's venv: the one running the tests
    for command, replacement in FREE_PORTS.items():
        code = code.replace(command, replacement)
    return code


def _diagnosed(processor) -> int:
    return httpx.get(f"{processor.http_url}/v1/diagnoses", params={"limit": 1}).json()["total"]


@pytest.mark.parametrize("block", [b for b in COMMANDS if "run" in b.directives or "with-server" in b.directives],
                         ids=lambda b: b.id)
def test_readme_block_runs(block, processor, tmp_path):
    _run_block(block, processor, "README")


def _run_block(block: Block, processor, where: str) -> None:
    before = _diagnosed(processor)
    code = _localize(block.code, processor)
    if block.lang == "python":
        argv = [sys.executable, "-c", code]
    else:
        argv = ["bash", "-euo", "pipefail", "-c", code]
    proc = subprocess.run(argv, cwd=ROOT, env=_env(processor), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"{where} block at line {block.line} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    if "with-server" in block.directives:
        assert proc.stdout.strip(), "a query against the processor printed nothing"
    expected = int(block.directives.get("expect-diagnoses") or 0)
    if expected:
        deadline = time.monotonic() + 30
        while _diagnosed(processor) < before + expected:
            assert time.monotonic() < deadline, f"{where} block at line {block.line}: no diagnosis arrived"
            time.sleep(0.1)


def test_the_docs_quick_starts_are_marked_to_run():
    assert {page.name for page, _ in DOC_COMMANDS} >= {"instrumentation.md", "guards.md"}


@pytest.mark.parametrize("page, block", DOC_COMMANDS, ids=[f"{p.name}:{b.id}" for p, b in DOC_COMMANDS])
def test_docs_quick_start_runs(page, block, processor, tmp_path):
    _run_block(block, processor, page.name)


@pytest.mark.parametrize("block", [b for b in COMMANDS if "server" in b.directives], ids=lambda b: b.id)
def test_readme_server_starts_and_stops(block, processor, tmp_path):
    command = _localize(block.code.strip(), processor) + " --http-port 0 --grpc-port 0"
    proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=tmp_path, env=_env(processor),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = re.search(r"(http://\S+?),", line)
        assert url, f"no ready line from {command!r}: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        assert httpx.get(f"{url.group(1)}/readyz").status_code == 200
        assert httpx.get(f"{url.group(1)}/").status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=30)
    assert rc == 0


def _requirements(dist: str, extras: frozenset[str] = frozenset(), seen: set[str] | None = None) -> set[str]:
    """``dist`` and every distribution it requires (with ``extras``), by normalized name."""
    from importlib import metadata

    from packaging.requirements import Requirement

    seen = set() if seen is None else seen
    name = _normalized(dist)
    key = f"{name}[{','.join(sorted(extras))}]"
    if key in seen:
        return seen
    seen.add(key)
    seen.add(name)
    for text in metadata.requires(dist) or ():
        req = Requirement(text)
        wanted = [e for e in extras if req.marker is not None and req.marker.evaluate({"extra": e})]
        if req.marker is None or wanted or (req.marker.evaluate({"extra": ""}) and "extra" not in str(req.marker)):
            try:
                _requirements(req.name, frozenset(req.extras), seen)
            except metadata.PackageNotFoundError:
                seen.add(_normalized(req.name))
    return seen


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed_by_readme() -> set[str]:
    """Distributions the README's install commands put in the venv (the ``.[all]`` line and ``install`` blocks)."""
    dists: set[str] = set()
    for block in COMMANDS:
        for extras in re.findall(r'-e "\.\[([\w,]+)\]"', block.code):
            dists |= _requirements("mast-otel", frozenset(extras.split(",")))
        if "install" in block.directives:
            for name in re.findall(r'pip install\s+"?([A-Za-z0-9_.-]+)', block.code):
                dists |= _requirements(name)
    return {d for d in dists if "[" not in d}


def test_samples_import_only_what_the_readme_installs():
    """A user who runs the README's install lines can run every Python sample."""
    import ast
    from importlib import metadata

    providers = metadata.packages_distributions()
    installed = _installed_by_readme()
    assert "mast-otel" in installed and "litellm" in installed
    missing = []
    for block in (b for b in COMMANDS if b.lang == "python"):
        for node in ast.walk(ast.parse(block.code)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            for module in names:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top == "mast_otel":
                    continue
                dists = {_normalized(d) for d in providers.get(top, ())}
                if not dists & installed:
                    missing.append(f"line {block.line}: {module} (from {sorted(dists) or 'no installed package'})")
    assert not missing, "README samples import packages its install commands do not provide:\n" + "\n".join(missing)


def test_readme_says_how_to_keep_litellm_offline():
    """litellm fetches its cost map at import (a 5 s stall offline) unless told not to."""
    text = README.read_text()
    if any("import litellm" in b.code for b in COMMANDS):
        assert "LITELLM_LOCAL_MODEL_COST_MAP=True" in text
