"""Runs from the files named on the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator

from mast_otel.processors.model import Run


def load(paths: Iterable[str | Path]) -> Iterator[Run]:
    """Every run in ``paths``: through the ingest file loader when installed, else step-list JSON only."""
    try:
        from mast_otel.processors.ingest.files import load_runs
    except ImportError:
        load_runs = _steplist_runs
    return load_runs(paths)


def _steplist_runs(paths: Iterable[str | Path]) -> Iterator[Run]:
    from mast_otel.processors.ingest.steplist import is_steplist, runs_from_steplist

    for path in paths:
        data = json.loads(Path(path).read_text())
        if not is_steplist(data):
            raise ValueError(f"{path}: not a step-list file (the OTLP file loader is not installed)")
        yield from runs_from_steplist(data)


def processor_config(path: str | None):
    """The processor configuration (file, environment, defaults) whose sections the commands use."""
    from mast_otel.processors.config import ProcessorConfig

    return ProcessorConfig.load(path)


def text_table(headers: list[str], rows: list[list[object]]) -> str:
    """Left-aligned columns separated by two spaces."""
    cells = [headers] + [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)
