"""Rule detection against the MAST-Data AG2 labels: per-mode precision, recall, F1, kappa.

    .venv/bin/python benchmarks/bench_accuracy.py [--records PATH] [--no-write]

Runs are split by a hash of their record id into a development half (the only half looked at
while writing detectors) and a held-out half; both halves and the whole set are reported.
The labels are an LLM judge's and noisy (see ../shared/eval/README.md). The one correction
applied to the data is the README's: the model is taken from ``mad_trace_key`` because
``llm_name`` is wrong for the GPT-4o-mini records. The detectors never see the labels.
Results go to docs/detection.md between the ``bench_accuracy`` markers: the per-mode tables
for the shipped defaults, what each content signal would add if switched on (the typed
``detection.content`` values in ``content.OPT_IN``, off by default), and modes per run and per failed run by model,
labels against rules.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from docblock import write_doc_block
from mast_otel.processors import taxonomy
from mast_otel.processors.config import ContentConfig, DetectionConfig
from mast_otel.processors.detectors import DETECTORS, content, diagnose, rule_modes
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


def _f(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def markdown(results: dict[str, Scores], counts: dict[str, int]) -> str:
    covered = sorted(rule_modes(), key=taxonomy.MODE_IDS.index)
    lines = [f"Runs: {', '.join(f'{k} {v}' for k, v in counts.items())}. Modes the rules cover: {', '.join(covered)}.", ""]
    for split, s in results.items():
        lines += [f"**{split}**", "", "| mode | name | precision | recall | F1 | kappa | support | predicted |",
                  "|---|---|---|---|---|---|---|---|"]
        for mode, c in s.per_mode.items():
            lines.append(f"| {mode} | {taxonomy.MODES[mode].name} | {_f(c.precision)} | {_f(c.recall)} | {_f(c.f1)} | "
                         f"{_f(c.kappa)} | {c.support} | {c.predicted} |")
        m, mac = s.micro, s.macro
        lines.append(f"| micro | covered modes | {_f(m.precision)} | {_f(m.recall)} | {_f(m.f1)} | {_f(m.kappa)} | "
                     f"{m.support} | {m.predicted} |")
        lines.append(f"| macro | covered modes | {_f(mac['precision'])} | {_f(mac['recall'])} | {_f(mac['f1'])} | "
                     f"{_f(mac['kappa'])} | | |")
        lines.append("")
    return "\n".join(lines)


def evaluate(records: list[dict], config: DetectionConfig) -> dict[str, list[tuple[str, dict, list]]]:
    """(model, labels, findings) per run, by split."""
    out: dict[str, list] = {"development": [], "held-out": []}
    for record in records:
        run = runs_from_steplist(corrected(record))[0]
        out[split_of(record)].append((corrected(record)["metadata"]["model"], run.labels["modes"], diagnose(run, config)))
    out["all"] = out["development"] + out["held-out"]
    return out


def _rate(tp: int, n: int) -> str:
    return f"{tp}/{n} = {tp / n:.2f}" if n else "0/0"


def content_signals(runs: dict[str, list]) -> str:
    """Precision (and recall on all runs) of each content signal, switched on, against its mode's labels."""
    lines = [f"Content signals switched on ({', '.join(f'`content.{k}` = {v}' for k, v in content.OPT_IN.model_dump().items())}); "
             "precision is labelled / predicted runs.", "",
             "| signal | mode | development | held-out | all | recall (all) |", "|---|---|---|---|---|---|"]
    for detector in (d for d in DETECTORS if d.config is ContentConfig):
        mode = detector.modes[0]
        cells = []
        for split in ("development", "held-out", "all"):
            hits = [labels[mode] for _, labels, found in runs[split] if any(f.detector == content.DETECTOR
                    and f.mode == mode for f in found)]
            cells.append(_rate(sum(hits), len(hits)))
        support = sum(labels[mode] for _, labels, _ in runs["all"])
        lines.append(f"| `{detector.name}` | {mode} | {' | '.join(cells)} | {sum(hits) / support:.2f} |")
    return "\n".join(lines)


def _per_failed_run(runs: list[tuple[str, dict, list]], model: str, count) -> float:
    failed = [(labels, found) for m, labels, found in runs if m == model and any(labels.values())]
    return sum(count(labels, {f.mode for f in found}) for labels, found in failed) / max(1, len(failed))


def _order(values: dict[str, float]) -> str:
    if len(set(values.values())) == 1:
        return "no order (all equal)"
    return " > ".join(sorted(values, key=values.__getitem__, reverse=True))


def per_model(shipped: list[tuple[str, dict, list]], opted_in: list[tuple[str, dict, list]]) -> str:
    """Modes per failed run (a run with any labelled mode) by model: labels, shipped rules, content signals on."""
    covered = rule_modes()
    columns = {
        "labelled modes": (shipped, lambda labels, found: sum(labels.values())),
        "labelled rule-covered modes": (shipped, lambda labels, found: sum(v for k, v in labels.items() if k in covered)),
        "rule modes (defaults)": (shipped, lambda labels, found: len(found)),
        "rule modes (content signals on)": (opted_in, lambda labels, found: len(found)),
    }
    models = sorted({m for m, _, _ in shipped})
    table = {name: {m: _per_failed_run(runs, m, count) for m in models} for name, (runs, count) in columns.items()}
    lines = ["| model | runs | failed (labels) | " + " | ".join(f"{c} per failed run" for c in columns) + " |",
             "|---|---|---|" + "---|" * len(columns)]
    for m in models:
        failed = sum(1 for mm, labels, _ in shipped if mm == m and any(labels.values()))
        lines.append(f"| {m} | {sum(1 for mm, _, _ in shipped if mm == m)} | {failed} | "
                     + " | ".join(f"{table[c][m]:.2f}" for c in columns) + " |")
    lines += ["", "Models by modes per failed run: " + "; ".join(f"{c}: {_order(v)}" for c, v in table.items()) + "."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=Path, default=DEFAULT_RECORDS)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/detection.md alone")
    args = parser.parse_args(argv)
    records = json.loads(args.records.read_text())
    shipped = evaluate(records, DetectionConfig())
    covered = sorted(rule_modes())
    results = {split: score([(labels, {f.mode for f in found}) for _, labels, found in runs], taxonomy.MODE_IDS, covered)
               for split, runs in shipped.items()}
    opted_in = evaluate(records, DetectionConfig(content=content.OPT_IN))
    body = "\n".join([markdown(results, {k: len(v) for k, v in shipped.items()}), content_signals(opted_in), "",
                      "Modes per failed run by model (all runs):", "", per_model(shipped["all"], opted_in["all"])])
    print(body)
    if not args.no_write:
        write_doc_block("bench_accuracy", body, DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main())
