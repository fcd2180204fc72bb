"""The service's folder shows its parts: only the host, the component protocol and the
factories stand at its top, every part is a sub-package that says what it owns, and no file
name repeats its folder's name (``store/store_schema.py`` is ``store/schema.py``)."""

from __future__ import annotations

import ast
from pathlib import Path

SERVICE = Path(__file__).resolve().parents[2] / "processors" / "service"
TOP = {"__init__.py", "server.py", "component.py", "factories.py"}


def test_only_the_host_the_component_protocol_and_the_factories_stand_at_the_top() -> None:
    assert {p.name for p in SERVICE.glob("*.py")} == TOP


def test_every_part_is_a_package_that_says_what_it_owns() -> None:
    parts = [p for p in SERVICE.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))]
    assert len(parts) >= 6
    for part in parts:
        init = part / "__init__.py"
        assert init.is_file(), f"{part.name}/ is not a package"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert len(doc.split()) >= 15, f"{part.name}/__init__.py does not say what the part owns"


def test_no_file_name_repeats_its_folder_name() -> None:
    repeated = [str(p.relative_to(SERVICE)) for p in SERVICE.rglob("*.py")
                if p.parent != SERVICE and p.stem != "__init__"
                and p.stem.startswith((p.parent.name + "_", p.parent.name.rstrip("s") + "_"))]
    assert not repeated, f"file names carrying their folder's name: {repeated}"
