"""Rule detection against the MAST-Data AG2 labels: per-mode precision, recall, F1, kappa.

    .venv/bin/python benchmarks/bench_accuracy.py [--records PATH] [--no-write]

Runs are split by a hash of their record id into a development half (the only half looked at
while writing detectors) and a held-out half; both halves and the whole set are reported.
The labels are an LLM judge's and noisy (see ../shared/eval/README.md). The one correction
applied to the data is the README's: the model is taken from ``mad_trace_key`` because
``llm_name`` is wrong for the GPT-4o-mini records. The detectors never see the labels.
Results go to docs/detection.md between the ``bench_accuracy`` markers.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path

from mast_otel.processors import registry
from mast_otel.processors.detectors import diagnose, rule_modes
from mast_otel.processors.ingest.steplist import runs_from_steplist
from mast_otel.processors.offline.scoring import Scores, score

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RECORDS = ROOT.parent / "shared" / "eval" / "mast-ag2" / "records.json"
DOC = ROOT / "docs" / "detection.md"
MODEL_BY_KEY_SUFFIX = (("GPT4o_Mini", "gpt-4o-mini"), ("GPT4o", "gpt-4o"), ("Claude", "claude"))


def split_of(record: dict) -> str:
    digest = hashlib.sha256(str(record["metadata"]["trace_id"]).encode()).digest()
    return "development" if digest[0] % 2 == 0 else "held-out"


def corrected(record: dict) -> dict:
    key = record["metadata"].get("mad_trace_key", "")
    model = next((m for suffix, m in MODEL_BY_KEY_SUFFIX if key.endswith(suffix)), record["metadata"].get("llm_name"))
    return {**record, "metadata": {**record["metadata"], "model": model}}


def write_doc_block(name: str, body: str, doc: Path = DOC) -> None:
    """Replace the text between ``<!-- name:start -->`` and ``<!-- name:end -->`` in the doc."""
    text = doc.read_text(encoding="utf-8")
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{doc} has no {start} ... {end} block")
    doc.write_text(pattern.sub(lambda _: f"{start}\n{body.rstrip()}\n{end}", text), encoding="utf-8")


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def markdown(results: dict[str, Scores], counts: dict[str, int]) -> str:
    covered = sorted(rule_modes(), key=registry.MODE_IDS.index)
    lines = [f"Runs: {', '.join(f'{k} {v}' for k, v in counts.items())}. Modes the rules cover: {', '.join(covered)}.", ""]
    for split, s in results.items():
        lines += [f"**{split}**", "", "| mode | name | precision | recall | F1 | kappa | support | predicted |",
                  "|---|---|---|---|---|---|---|---|"]
        for mode, c in s.per_mode.items():
            lines.append(f"| {mode} | {registry.MODES[mode].name} | {_f(c.precision)} | {_f(c.recall)} | {_f(c.f1)} | "
                         f"{_f(c.kappa)} | {c.support} | {c.predicted} |")
        m, mac = s.micro, s.macro
        lines.append(f"| micro | covered modes | {_f(m.precision)} | {_f(m.recall)} | {_f(m.f1)} | {_f(m.kappa)} | "
                     f"{m.support} | {m.predicted} |")
        lines.append(f"| macro | covered modes | {_f(mac['precision'])} | {_f(mac['recall'])} | {_f(mac['f1'])} | "
                     f"{_f(mac['kappa'])} | | |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=Path, default=DEFAULT_RECORDS)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/detection.md alone")
    args = parser.parse_args(argv)
    records = json.loads(args.records.read_text())
    pairs: dict[str, list] = {"development": [], "held-out": []}
    for record in records:
        run = runs_from_steplist(corrected(record))[0]
        pairs[split_of(record)].append((run.labels["modes"], {f.mode for f in diagnose(run)}))
    pairs["all"] = pairs["development"] + pairs["held-out"]
    covered = sorted(rule_modes())
    results = {split: score(p, registry.MODE_IDS, covered) for split, p in pairs.items()}
    body = markdown(results, {k: len(v) for k, v in pairs.items()})
    print(body)
    if not args.no_write:
        write_doc_block("bench_accuracy", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
