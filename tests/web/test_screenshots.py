"""``scripts/screenshots.py`` takes every screenshot the README and docs/ show, in one command."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools import require_tool

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "screenshots.py"
IMAGE_LINK = re.compile(r"!\[[^\]]*\]\(((?:docs/)?img/[^)]+\.png)\)")
MAX_BYTES = 500 * 1024

pytestmark = pytest.mark.e2e


def shown_images() -> set[str]:
    """The file names of the images the README and docs/ pages show."""
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    return {Path(link).name for page in pages for link in IMAGE_LINK.findall(page.read_text(encoding="utf-8"))}


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is no PNG"
    return struct.unpack(">II", data[16:24])


def test_the_script_makes_every_image_the_docs_show_and_the_docs_name_it():
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import screenshots
    finally:
        sys.path.remove(str(SCRIPT.parent))
    assert shown_images() == set(screenshots.SHOTS)
    assert all((ROOT / "docs" / "img" / name).is_file() for name in screenshots.SHOTS)
    assert "scripts/screenshots.py" in (ROOT / "docs" / "web.md").read_text(encoding="utf-8")


def test_the_script_photographs_each_page_in_one_command(tmp_path):
    require_tool("chromium")
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    for name in shown_images():
        width, height = png_size(tmp_path / name)
        assert width == 1366 and 600 <= height <= 2200, (name, width, height)
        assert (tmp_path / name).stat().st_size <= MAX_BYTES, name
