"""Maps the repository's top-level folders onto subpackages of ``mast_otel``.

``instrumentation/`` becomes ``mast_otel.instrumentation``, ``processors/`` becomes
``mast_otel.processors`` and ``demo/`` becomes ``mast_otel.demo``, so nothing generic lands at
the top of site-packages.
"""

from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).parent
FOLDERS = {
    "mast_otel": "src/mast_otel",
    "mast_otel.instrumentation": "instrumentation",
    "mast_otel.processors": "processors",
    "mast_otel.demo": "demo",
}


def _packages() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    package_dir: dict[str, str] = {}
    for name, folder in FOLDERS.items():
        package_dir[name] = folder
        base = ROOT / folder
        for init in sorted(base.rglob("__init__.py")):
            rel = init.parent.relative_to(base)
            if any(part.startswith((".", "__")) for part in rel.parts):
                continue
            packages.append(".".join((name, *rel.parts)) if rel.parts else name)
    return packages, package_dir


PACKAGES, PACKAGE_DIR = _packages()
setup(packages=PACKAGES, package_dir=PACKAGE_DIR)
