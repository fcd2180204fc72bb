"""``pip install .`` ships what the editable install finds: every subpackage and data file, and
building it prints no setuptools warning."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_maps_folders_onto_mast_otel_and_carries_templates(tmp_path: Path) -> None:
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                           check=True, capture_output=True, text=True, timeout=300)
    # setuptools' warnings (a deprecated license table, a data folder it would ignore) are Python
    # warnings, "SomethingWarning: ...", and land in every user's install log
    output = build.stdout + build.stderr
    assert not re.findall(r"\w*Warning: .*", output) and "would be ignored" not in output, \
        "\n".join(re.findall(r"\w*Warning: .*", output))
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
