"""``pip install .`` ships what the editable install finds: every subpackage and data file."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_maps_folders_onto_mast_otel_and_carries_templates(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    wheel = next(tmp_path.glob("mast_otel-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    top_level = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top_level == {"mast_otel"}  # nothing generic like "processors" in site-packages
    for folder in ("instrumentation", "processors", "demo"):
        for source in (ROOT / folder).rglob("*.py"):
            assert f"mast_otel/{source.relative_to(ROOT).as_posix()}" in names, source
    templates = {p.name for p in (ROOT / "processors" / "web" / "templates").glob("*.html")}
    assert templates and all(f"mast_otel/processors/web/templates/{t}" in names for t in templates)
    assert "mast_otel/py.typed" in names
