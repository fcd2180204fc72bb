"""The linter and the type checker over the product code, configured in pyproject.toml.

ruff finds defects (unused and undefined names, bugbear's traps); mypy checks the types.
The product folders become ``mast_otel.*`` only when installed, so mypy reads them through a
tree of links named as the package (kept in the temporary directory with its cache, so a
second run rechecks only what changed).
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = {"instrumentation": ROOT / "instrumentation", "processors": ROOT / "processors", "demo": ROOT / "demo",
           "wire": ROOT / "src" / "mast_otel" / "wire"}
PACKAGE_FILES = ("__init__.py", "py.typed")


def _tool(name: str) -> str:
    path = Path(sys.executable).with_name(name)
    if not path.exists():
        pytest.fail(f"{name} is not installed beside {sys.executable}: install the test extra (pip install -e '.[test]')")
    return str(path)


def _work_dir() -> Path:
    """A directory of this checkout's own, outside it: the linked package tree and mypy's cache."""
    key = hashlib.sha1(str(ROOT).encode()).hexdigest()[:12]
    work = Path(tempfile.gettempdir()) / f"mast-otel-mypy-{key}"
    package = work / "tree" / "mast_otel"
    package.mkdir(parents=True, exist_ok=True)
    links = {name: folder for name, folder in PRODUCT.items()}
    links.update({name: ROOT / "src" / "mast_otel" / name for name in PACKAGE_FILES})
    for name, target in links.items():
        link = package / name
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    return work


def test_ruff_finds_nothing_in_the_product_code() -> None:
    result = subprocess.run([_tool("ruff"), "check", "--no-fix", "--output-format", "concise", *PRODUCT.values()],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"ruff check:\n{result.stdout}{result.stderr}"


def test_mypy_finds_nothing_in_the_product_code() -> None:
    work = _work_dir()
    result = subprocess.run(
        [_tool("mypy"), "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(work / "cache"),
         "--no-error-summary", "-p", "mast_otel"],
        cwd=work / "tree", capture_output=True, text=True, timeout=600)
    # Name the files as they are in the repository, not as the linked tree shows them.
    shown = re.sub(r"^mast_otel/(instrumentation|processors|demo)/", r"\1/", result.stdout, flags=re.M)
    shown = re.sub(r"^mast_otel/wire/", "src/mast_otel/wire/", shown, flags=re.M)
    assert result.returncode == 0, f"mypy:\n{shown}{result.stderr}"


def test_the_checks_see_the_code_they_are_given(tmp_path: Path) -> None:
    """Each tool fails on a file with a defect of the kind it is there for."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\ndef f() -> int:\n    return 'text'\n", encoding="utf-8")
    lint = subprocess.run([_tool("ruff"), "check", "--no-fix", "--config", str(ROOT / "pyproject.toml"), str(bad)],
                          capture_output=True, text=True, timeout=120)
    assert lint.returncode == 1 and "F401" in lint.stdout
    types = subprocess.run([_tool("mypy"), "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "c"),
                            str(bad)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert types.returncode == 1 and "return-value" in types.stdout


def test_the_test_commands_name_test_files_that_exist() -> None:
    """scripts/ and .ci/ name test files in examples and calls; each must be there."""
    named = {m for path in [*(ROOT / "scripts").iterdir(), *(ROOT / ".ci").iterdir()] if path.is_file()
             for m in re.findall(r"tests/[\w/]+\.py", path.read_text(encoding="utf-8"))}
    assert named, "the scripts name no test file at all: the check reads the wrong place"
    assert not [n for n in sorted(named) if not (ROOT / n).is_file()]
