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


def _is_data_folder(folder: Path) -> bool:
    """A folder of files the code reads (web templates), not modules: listed as a package too,
    so setuptools ships its files as package data instead of warning that it would ignore it."""
    return any(f.is_file() and f.suffix not in (".py", ".pyc") for f in folder.iterdir())


def _packages() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    package_dir: dict[str, str] = {}
    for name, folder in FOLDERS.items():
        package_dir[name] = folder
        base = ROOT / folder
        for path in sorted(p for p in (base, *base.rglob("*")) if p.is_dir()):
            rel = path.relative_to(base)
            if any(part.startswith((".", "__")) for part in rel.parts):
                continue
            parent = ".".join((name, *rel.parts[:-1]))
            if (path / "__init__.py").is_file() or (rel.parts and parent in packages and _is_data_folder(path)):
                packages.append(".".join((name, *rel.parts)) if rel.parts else name)
    return packages, package_dir


PACKAGES, PACKAGE_DIR = _packages()
setup(packages=PACKAGES, package_dir=PACKAGE_DIR)
