"""Framework corpus: what the rules find on each framework's own spans, per scenario.

    .venv/bin/python benchmarks/framework_corpus.py [--no-write]

Reads tests/frameworks/corpus (recorded by tests/frameworks/record) and tests/typescript/corpus
(recorded by tests/typescript/record), diagnoses every run with the shipped defaults (no tool
catalog, no mast.* hints) and writes the framework x scenario tables into
docs/frameworks/README.md between the ``framework_corpus`` and ``typescript_corpus`` markers. A cell names
the modes found; "quiet" means nothing was found (right for clean runs and near misses);
"missed" and "false" mark a wrong diagnosis; "n/a" a scenario the framework cannot express;
"not recorded" one left out of a small recorder's corpus. A framework with no recording of a
variant (an instrumentation without that content mode) has no column in its table.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docblock import write_doc_block  # noqa: E402
from mast_otel.processors.detectors import rule_findings  # noqa: E402
from mast_otel.processors.ingest.files import load_runs  # noqa: E402
from tests.frameworks.corpus_files import manifests, recordings  # noqa: E402
from tests.frameworks.harness.scenarios import SCENARIOS  # noqa: E402

DOC = ROOT / "docs" / "frameworks" / "README.md"
CORPORA = {"framework_corpus": ROOT / "tests" / "frameworks" / "corpus", "typescript_corpus": ROOT / "tests" / "typescript" / "corpus"}


def cell(expected: frozenset[str], allowed: frozenset[str], found: set[str]) -> tuple[str, bool]:
    """The cell text and whether the diagnosis is right."""
    missed, false = expected - found, found - expected - allowed
    parts = sorted(found & (expected | allowed))
    if missed:
        parts.append("missed " + ", ".join(sorted(missed)))
    if false:
        parts.append("**false " + ", ".join(sorted(false)) + "**")
    return (", ".join(parts) or "quiet"), not missed and not false


NOT_RECORDED = "not recorded"


def table(results: dict[str, tuple[str, bool]], frameworks: list[str], scenarios) -> tuple[str, int, int]:
    """One variant's framework x scenario table (cells keyed "framework/scenario"), with how many
    runs were right of how many recorded."""
    right = total = 0
    rows = ["| scenario (expected) | " + " | ".join(frameworks) + " |", "|" + "---|" * (len(frameworks) + 1)]
    for sc in scenarios:
        cells = []
        for fw in frameworks:
            text, ok = results.get(f"{fw}/{sc.name}", ("n/a", True))
            if text not in ("n/a", NOT_RECORDED):
                right, total = right + ok, total + 1
            cells.append(text)
        rows.append(f"| {sc.name} ({', '.join(sorted(sc.expected)) or 'nothing'}) | " + " | ".join(cells) + " |")
    return "\n".join(rows), right, total


def tables(corpus: Path) -> str:
    results: dict[str, dict[str, tuple[str, bool]]] = defaultdict(dict)
    for rec in recordings(corpus):
        runs = [r for r in load_runs([rec.path]) if r.steps]
        found = {f.mode for run in runs for f in rule_findings(run)}
        results[rec.variant][f"{rec.framework}/{rec.scenario.name}"] = cell(rec.scenario.expected, rec.scenario.allowed, found)
    found = manifests(corpus)
    out = []
    for variant, title in (("content", "With content capture (each instrumentation's default or documented switch)"),
                           ("no-content", "With content capture off")):
        frameworks = [fw for fw in found if any(key.startswith(f"{fw}/") for key in results[variant])]
        for fw in frameworks:
            for sc in SCENARIOS:
                if sc.name not in found[fw].get("cannot_express", {}):
                    results[variant].setdefault(f"{fw}/{sc.name}", (NOT_RECORDED, True))
        text, right, total = table(results[variant], frameworks, SCENARIOS)
        out.append(f"**{title}**: {right} of {total} runs diagnosed right.\n\n" + text)
    return "\n\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    for block, corpus in CORPORA.items():
        body = tables(corpus)
        print(body, end="\n\n")
        if not args.no_write:
            write_doc_block(block, body, DOC)


if __name__ == "__main__":
    main()
