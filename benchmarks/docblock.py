"""Benchmarks write their figures into the docs between ``<!-- name:start -->`` and ``<!-- name:end -->``."""

from __future__ import annotations

import re
from pathlib import Path


def write_doc_block(name: str, body: str, doc: Path) -> None:
    """Replace the marked block ``name`` in ``doc`` with ``body``."""
    text = doc.read_text(encoding="utf-8")
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{doc} has no {start} ... {end} block")
    doc.write_text(pattern.sub(lambda _: f"{start}\n{body.rstrip()}\n{end}", text), encoding="utf-8")
