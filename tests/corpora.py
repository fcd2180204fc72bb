"""Every recorded corpus in the repository, for tests that compare two paths over all of them.

The framework, team, TypeScript and session corpora (OTLP/JSON as real instrumentation wrote it) and the
hand-made fixtures (step lists, Who&When records). Found from the folders, so a corpus folder
added later is compared without a test naming it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

TESTS = Path(__file__).parent
ROOTS = (TESTS / "frameworks" / "corpus", TESTS / "teams" / "corpus", TESTS / "typescript" / "corpus", TESTS / "sessions" / "corpus",
         TESTS / "fixtures")
_NOT_RECORDINGS = {"manifest.json", "labels.json"}


@lru_cache(maxsize=1)
def corpus_files() -> tuple[Path, ...]:
    """Every recording (``manifest.json`` and ``labels.json`` describe them: not recordings; a run's
    ``<scenario>.logs.json`` holds its log records, read with its spans, not a recording of its own)."""
    return tuple(p for root in ROOTS for p in sorted(root.rglob("*.json"))
                 if p.name not in _NOT_RECORDINGS and not p.name.endswith(".logs.json"))


def otlp_documents() -> list[tuple[Path, dict[str, Any]]]:
    """The recordings that are OTLP/JSON documents, parsed."""
    out = []
    for path in corpus_files():
        doc = json.loads(path.read_text())
        if isinstance(doc, dict) and "resourceSpans" in doc:
            out.append((path, doc))
    return out
