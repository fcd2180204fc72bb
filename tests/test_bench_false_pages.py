"""``benchmarks/bench_false_pages.py``, smaller: its counting by hand, its diagnosis over two recordings, its baseline run."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

import bench_false_pages as bench  # noqa: E402

FRAMEWORKS = Path(__file__).resolve().parent / "frameworks" / "corpus"


def _nonempty(figures: bench.Figures) -> dict[str, bench.Counts]:
    return {mode: counts for mode, counts in figures.modes.items() if counts != bench.Counts()}


def test_each_finding_is_right_false_debatable_or_unjudged_as_the_labels_say():
    items = (
        bench.Item("a", Path("a"), labelled=frozenset({"FM-1.5"}), expected=frozenset({"FM-1.5"}), debatable=frozenset({"FM-3.2"})),
        bench.Item("b", Path("b"), labelled=frozenset({"FM-3.1"}), expected=frozenset()),  # left to the judge
        bench.Item("c", Path("c"), labelled=frozenset({"FM-1.3"}), expected=frozenset({"FM-1.3"})),
    )
    corpus = bench.Corpus("hand", frozenset(bench.ALL_MODES - {"FM-2.6"}), "", items)
    figures = bench.tally(corpus, {"a": {"FM-1.5", "FM-3.2", "FM-3.1"}, "b": set(), "c": {"FM-2.6", "FM-3.1"}})
    assert _nonempty(figures) == {
        "FM-1.5": bench.Counts(labelled=1, expected=1, right=1, caught=1),
        "FM-3.1": bench.Counts(labelled=1, false=2),  # on a and c; b's label is not expected of the rules: no miss
        "FM-3.2": bench.Counts(debatable=1),
        "FM-1.3": bench.Counts(labelled=1, expected=1, missed=1),
        "FM-2.6": bench.Counts(unjudged=1),
    }
    assert figures.modes["FM-1.5"].precision == 1.0 and figures.modes["FM-1.5"].recall == 1.0
    assert figures.modes["FM-3.1"].precision == 0.0 and figures.modes["FM-3.1"].recall is None
    assert figures.modes["FM-1.3"].precision is None and figures.modes["FM-1.3"].recall == 0.0


def test_two_recordings_and_a_mislabelled_copy_give_one_right_finding_and_one_false_page():
    corpus = bench.scenario_corpus("frameworks", FRAMEWORKS, "content")
    by_id = {item.id: item for item in corpus.items}
    loop, clean = by_id["crewai/loop.json"], by_id["crewai/clean.json"]
    assert loop.labelled == loop.expected == frozenset({"FM-1.3"}) and clean.labelled == frozenset()
    mislabelled = dataclasses.replace(loop, id="loop said to be clean", labelled=frozenset(), expected=frozenset())
    figures = bench.measure(dataclasses.replace(corpus, items=(loop, clean, mislabelled)))
    assert figures.items == 3 and not figures.unreadable
    assert _nonempty(figures) == {"FM-1.3": bench.Counts(labelled=1, expected=1, right=1, caught=1, false=1)}
    assert (figures.modes["FM-1.3"].precision, figures.modes["FM-1.3"].recall) == (0.5, 1.0)


def test_the_baseline_runs_the_other_revision_and_shows_its_figures_beside_these(tmp_path):
    root = BENCHMARKS.parent
    if shutil.which("git") is None or subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    command = [sys.executable, str(BENCHMARKS / "bench_false_pages.py"), "--corpus", "sessions/no-content"]
    body = json.loads(subprocess.run([*command, "--json", "--baseline", "HEAD"], capture_output=True, text=True, check=True).stdout)
    assert Path(body["product"]) == root / "processors"
    theirs_product = Path(body["baseline"]["product"])
    assert theirs_product.name == "processors" and not theirs_product.is_relative_to(root)  # the export, not this tree
    ours, theirs = body["corpora"]["sessions/no-content"], body["baseline"]["corpora"]["sessions/no-content"]
    assert theirs["items"] == ours["items"] == 28


def test_a_figure_that_moved_shows_before_and_after_and_one_that_did_not_shows_once():
    before = bench.Figures("c", 2, {m: bench.Counts() for m in bench.ALL_MODES})
    after = bench.Figures("c", 2, {m: bench.Counts() for m in bench.ALL_MODES})
    before.modes["FM-1.5"] = bench.Counts(labelled=1, expected=1, right=1, caught=1, false=2)
    after.modes["FM-1.5"] = bench.Counts(labelled=1, expected=1, right=1, caught=1)
    [row, total] = bench.rows([after], {"c": before}, ["FM-1.5"], ["FM-1.5"], "alerting modes")
    cells = dict(zip(bench.HEADER, row))
    assert (cells["mode"], cells["severity"], cells["labelled"], cells["false pages"], cells["precision"]) == \
        ("FM-1.5", "fatal", "1", "2→0", "0.33→1.00")
    assert total[:2] == ["alerting modes", "fatal"] and total[2:] == row[2:]
