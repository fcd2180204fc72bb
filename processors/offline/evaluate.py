"""``mast-otel eval FILES``: score detection against labelled runs.

Labels come from the files (MAST-Data ``mast_annotation`` or our own ``labels``). The rules
are scored by default; ``--judge MODEL`` scores the LLM judge instead, and ``--with-rules``
scores the union of both. Macro averages run over the modes the scored detector covers.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Iterable

from mast_otel.processors import taxonomy
from mast_otel.processors.model import Run
from mast_otel.processors.offline.inputs import load, processor_config, text_table
from mast_otel.processors.offline.scoring import Scores, score

if TYPE_CHECKING:
    from mast_otel.processors.config import ProcessorConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="labelled runs (step-list or trace files)")
    parser.add_argument("--judge", metavar="MODEL", help="evaluate the LLM judge with this litellm model")
    parser.add_argument("--judge-api-base", metavar="URL", help="OpenAI-compatible endpoint for the judge model")
    parser.add_argument("--with-rules", action="store_true", help="with --judge: score rules and judge combined")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--config", metavar="PATH", help="processor YAML; its detection and judge sections are used")


def rule_predictions(runs: Iterable[Run], config: ProcessorConfig) -> dict[str, set[str]]:
    from mast_otel.processors.hints import rule_findings

    return {run.trace_id: {f.mode for f in rule_findings(run, config.detection, config.hints)} for run in runs}


def judge_predictions(runs: list[Run], judge_config) -> tuple[dict[str, set[str]], dict[str, str]]:
    """Judge verdicts per run, and the error for each run the judge could not diagnose."""
    from mast_otel.processors.judge.offline import judge_runs

    verdicts: dict[str, set[str]] = {}
    errors: dict[str, str] = {}
    for run, result in judge_runs(runs, judge_config):
        if isinstance(result, Exception):
            errors[run.trace_id] = str(result)
        else:
            verdicts[run.trace_id] = {f.mode for f in result}
    return verdicts, errors


def evaluate(runs: list[Run], predictions: dict[str, set[str]], covered: Iterable[str]) -> Scores:
    pairs = [(run.labels["modes"], predictions[run.trace_id]) for run in runs if run.trace_id in predictions]
    return score(pairs, taxonomy.MODE_IDS, [m for m in taxonomy.MODE_IDS if m in set(covered)])


def run(args: argparse.Namespace) -> int:
    try:
        runs = [r for r in load(args.files) if "modes" in r.labels]
        if not runs:
            raise ValueError("no labelled runs in the given files (expected mast_annotation or labels.modes)")
        config = processor_config(args.config)
    except (OSError, ValueError) as exc:
        print(f"mast-otel eval: {exc}", file=sys.stderr)
        return 2
    errors: dict[str, str] = {}
    if args.judge:
        update = {"model": args.judge, **({"api_base": args.judge_api_base} if args.judge_api_base else {})}
        judge_config = config.judge.model_copy(update=update)
        predictions, errors = judge_predictions(runs, judge_config)
        covered = [m.id for m in taxonomy.MODES.values() if "judge" in m.covered_by]
        source = "judge"
        if args.with_rules:
            rules = rule_predictions(runs, config)
            predictions = {tid: modes | rules[tid] for tid, modes in predictions.items()}
            covered, source = list(taxonomy.MODE_IDS), "rules+judge"
    else:
        predictions = rule_predictions(runs, config)
        covered = [m.id for m in taxonomy.MODES.values() if "rules" in m.covered_by]
        source = "rules"
    scores = evaluate(runs, predictions, covered)
    result = {"source": source, "runs": len(runs), "scored_runs": len(runs) - len(errors),
              "errors": errors, **scores.as_dict()}
    sys.stdout.write(json.dumps(result, indent=2) + "\n" if args.format == "json" else as_table(result))
    return 0


def as_table(result: dict) -> str:
    f = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
    rows = [[m, taxonomy.MODES[m].name, f(c["precision"]), f(c["recall"]), f(c["f1"]), f(c["kappa"]), c["support"],
             c["predicted"]] for m, c in result["modes"].items()]
    micro, macro = result["micro"], result["macro"]
    rows.append(["micro", "(covered modes)", f(micro["precision"]), f(micro["recall"]), f(micro["f1"]),
                 f(micro["kappa"]), micro["support"], micro["predicted"]])
    rows.append(["macro", "(covered modes)", f(macro["precision"]), f(macro["recall"]), f(macro["f1"]),
                 f(macro["kappa"]), "", ""])
    table = text_table(["mode", "name", "precision", "recall", "F1", "kappa", "support", "predicted"], rows)
    head = f"{result['source']}: {result['scored_runs']} of {result['runs']} labelled runs scored"
    errors = f"; {len(result['errors'])} could not be judged" if result["errors"] else ""
    return f"{head}{errors}\n{table}\n"
