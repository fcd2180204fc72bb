"""Runs from the files named on the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Sequence

from mast_otel.processors.ingest.files import LoadReport, load_runs
from mast_otel.processors.model import Run


def load(paths: Iterable[str | Path], report: LoadReport | None = None) -> Iterator[Run]:
    """Every run in ``paths``, counting records, runs and true duplicates into ``report``."""
    return load_runs(paths, report=report)


def processor_config(path: str | None):
    """The processor configuration (file, environment, defaults) whose sections the commands use.

    An invalid one raises :class:`~mast_otel.processors.usage.UsageError`, as unreadable input files do.
    """
    from mast_otel.processors.usage import load_config

    return load_config(path)


def text_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces."""
    cells = [headers] + [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)
