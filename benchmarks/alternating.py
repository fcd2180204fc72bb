"""Two builds timed in child processes of their own interpreters, alternately, and the per-pair
ratio of a figure: what ``bench_content_path.py``, ``bench_normalize.py`` and ``bench_decode.py
--corpus`` share when given another build's python."""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
Rounds = list[dict[str, float]]  # one child's rounds, each a figure name -> CPU seconds (or a count)


def child_rounds(python: str, script: str, args: list[str]) -> Rounds:
    """``script --child ARGS`` run by ``python`` (its build's package; this checkout's corpus and
    scripts): the rounds it prints as JSON on its last line."""
    done = subprocess.run([python, script, "--child", *args], check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def alternate(builds: dict[str, str], pairs: int, script: str, args: list[str]) -> dict[str, list[Rounds]]:
    """Each build's children, ``pairs`` per build, the baseline first in odd pairs (1st, 3rd, ...),
    without each child's first round (imports, memories filling up)."""
    kept: dict[str, list[Rounds]] = {name: [] for name in builds}
    for pair in range(pairs):
        for name in sorted(builds, reverse=pair % 2 == 0):
            kept[name].append(child_rounds(builds[name], script, args)[1:])
    return kept


def median_of(rounds: list[Rounds], what: str) -> float:
    """The median of ``what`` over every kept round of one build."""
    return statistics.median(r[what] for proc in rounds for r in proc)


def pair_ratios(kept: dict[str, list[Rounds]], what: str, *, baseline_over_this: bool = True) -> str:
    """The median and range of the per-pair ratios of ``what``'s medians."""
    pairs = [statistics.median(r[what] for r in b) / statistics.median(r[what] for r in t)
             for b, t in zip(kept["baseline"], kept["this"])]
    if not baseline_over_this:
        pairs = [1 / p for p in pairs]
    name = "baseline / this" if baseline_over_this else "this / baseline"
    return f"{name} per pair: median {statistics.median(pairs):.3f} ({min(pairs):.3f}-{max(pairs):.3f})"
