"""Rule accuracy where the labels are known: the framework corpus and the labelled fixtures.

    .venv/bin/python benchmarks/bench_accuracy.py [--no-write] [--resamples N]

The framework corpus (tests/frameworks/corpus) is ten frameworks' own instrumentation
recording scripted scenarios; each recording is labelled by construction from its scenario
(expected modes present, allowed modes not scored, every other mode absent), exactly as
``mast-otel eval tests/frameworks/corpus`` reads it. Reported per mode with 95% intervals
(Wilson for precision and recall, bootstrap over runs for F1 and kappa), with content capture
and without, then the fixture step lists, then a sweep of each detection threshold over
neighbouring values on the content-captured corpus: how the rule modes' macro F1 and the
false alarms move, which is what the defaults are chosen from. Results go to
docs/detection.md between the ``bench_accuracy`` markers.

The MAST-Data AG2 labels are not used: they fail ``eval``'s label checks (the same label
vectors row by row across sub-datasets), so agreement with them is not accuracy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from docblock import write_doc_block  # noqa: E402
from mast_otel.processors import taxonomy  # noqa: E402
from mast_otel.processors.config import DetectionConfig, HintsConfig  # noqa: E402
from mast_otel.processors.detectors import rule_findings  # noqa: E402
from mast_otel.processors.ingest.corpus import load_corpus  # noqa: E402
from mast_otel.processors.ingest.files import load_runs  # noqa: E402
from mast_otel.processors.model import Run  # noqa: E402
from mast_otel.processors.offline.scoring import Scores, score  # noqa: E402

CORPUS = ROOT / "tests" / "frameworks" / "corpus"
FIXTURES = [ROOT / "tests" / "fixtures" / "runs" / "sre_steplist.json"]
DOC = ROOT / "docs" / "detection.md"
RULE_MODES = [m.id for m in taxonomy.MODES.values() if "rules" in m.covered_by]
# threshold -> values tried (the default among them)
SWEEP = {
    ("repetition", "min_tool_repeats"): (2, 3, 4, 5),
    ("repetition", "min_output_repeats"): (2, 3, 4),
    ("repetition", "min_output_chars"): (1, 60, 200),
    ("termination", "steps_after_success"): (1, 2, 4, 8),
    ("premature", "budget_fraction"): (0.25, 0.5, 0.75),
    ("history", "drop_ratio"): (0.25, 0.5, 0.75),
    ("history", "min_messages"): (2, 4, 8),
}


def scored(runs: list[Run], detection: DetectionConfig, resamples: int) -> Scores:
    hints = HintsConfig()
    pairs = [(run.labels["modes"], {f.mode for f in rule_findings(run, detection, hints)}) for run in runs]
    return score(pairs, taxonomy.MODE_IDS, RULE_MODES, resamples=resamples)


def _fig(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" + (f" ({ci[0]:.2f}-{ci[1]:.2f})" if ci else "")


def table(scores: Scores) -> str:
    rows = ["| mode | name | precision | recall | F1 | kappa | support | predicted |", "|---|---|---|---|---|---|---|---|"]
    for mode, ms in scores.per_mode.items():
        c = ms.confusion
        if not c.scored:
            continue
        figs = " | ".join(_fig(getattr(c, k), ms.intervals.get(k)) for k in ("precision", "recall", "f1", "kappa"))
        rows.append(f"| {mode} | {taxonomy.MODES[mode].name} | {figs} | {c.support} | {c.predicted} |")
    macro = " | ".join(_fig(scores.macro[k], scores.macro_intervals[k]) for k in ("precision", "recall", "f1", "kappa"))
    rows.append(f"| macro | {len(scores.macro_modes)} rule modes | {macro} | | |")
    return "\n".join(rows)


def sweep(runs: list[Run]) -> str:
    base = DetectionConfig()
    rows = ["| threshold | default | value: macro F1, false alarms, misses |", "|---|---|---|"]
    for (group, key), values in SWEEP.items():
        default = getattr(getattr(base, group), key)
        cells = []
        for value in values:
            detection = base.model_copy(update={group: getattr(base, group).model_copy(update={key: value})})
            s = scored(runs, detection, resamples=0)
            fp = sum(ms.confusion.fp for ms in s.per_mode.values())
            fn = sum(ms.confusion.fn for m, ms in s.per_mode.items() if m in RULE_MODES)
            f1 = s.macro["f1"]
            mark = "**" if value == default else ""
            cells.append(f"{mark}{value}: {'-' if f1 is None else f'{f1:.2f}'}, {fp}, {fn}{mark}")
        rows.append(f"| `{group}.{key}` | {default} | " + "; ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    runs = load_corpus(CORPUS)
    content = [r for r in runs if r.labels["group"].endswith("/content")]
    no_content = [r for r in runs if r.labels["group"].endswith("/no-content")]
    fixtures = [r for r in load_runs(FIXTURES) if "modes" in r.labels]
    detection = DetectionConfig()
    frameworks = len({r.labels["group"].split("/")[0] for r in runs})
    parts = [
        f"Framework corpus: {len(runs)} recordings from {frameworks} frameworks ({len(content)} with content capture, "
        f"{len(no_content)} without); `mast-otel eval tests/frameworks/corpus` scores both together. "
        "Intervals are 95%: Wilson for precision and recall, percentile bootstrap over runs "
        f"({args.resamples} resamples) for F1, kappa and the macro.",
        f"**With content capture** ({len(content)} runs)\n\n" + table(scored(content, detection, args.resamples)),
        f"**Without content capture** ({len(no_content)} runs; what each instrumentation keeps decides what can "
        "be seen, see [frameworks/README.md](frameworks/README.md))\n\n" + table(scored(no_content, detection, args.resamples)),
        f"**Fixture step lists** (`tests/fixtures/runs`, {len(fixtures)} hand-labelled runs; a smoke check, "
        "too few runs for the intervals to mean much)\n\n" + table(scored(fixtures, detection, args.resamples)),
        "**Threshold sweep** on the corpus with content capture (defaults in bold; false alarms over all "
        "modes, misses over rule modes):\n\n" + sweep(content),
    ]
    body = "\n\n".join(parts)
    print(body)
    if not args.no_write:
        write_doc_block("bench_accuracy", body, DOC)


if __name__ == "__main__":
    main()
