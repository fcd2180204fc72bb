"""``mast-otel eval PATHS``: score detection against labelled runs.

Labels come from the files (MAST-Data ``mast_annotation`` or our own ``labels``) or, for a
scenario corpus directory (``labels.json`` at its top, e.g. ``tests/frameworks/corpus``), from
each recording's scenario. The rules are scored by default; ``--judge MODEL`` scores the LLM
judge instead, and ``--with-rules`` scores the union of both. Runs whose label names the agent
at fault (Who&When logs, corpus scenarios with a ``responsible`` agent) are also scored for
attribution, from the rule findings.

Before any figure, the labels are checked (:mod:`label_checks`). Labels that fail a check are
not presented as accuracy: ``eval`` names the check and stops, unless
``--accept-suspect-labels`` asks for the figures anyway, which are then titled as agreement
with suspect labels. The output always says how many records were read, how many runs were
scored and why any were not.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping

from mast_otel.processors import taxonomy
from mast_otel.processors.ingest.corpus import is_corpus, load_corpus, resolve_steps
from mast_otel.processors.ingest.files import LoadReport
from mast_otel.processors.judge.definitions import to_our_split
from mast_otel.processors.model import Finding, Run
from mast_otel.processors.offline.attribution_scoring import AttributionCase, score_attribution
from mast_otel.processors.offline.inputs import load, processor_config, text_table
from mast_otel.processors.offline.label_checks import LabelRow, check_labels
from mast_otel.processors.offline.scoring import DEFAULT_RESAMPLES, Scores, score
from mast_otel.processors.usage import UsageError, number_at_least

if TYPE_CHECKING:
    from mast_otel.processors.config import ProcessorConfig

SUSPECT_EXIT = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="PATH",
                        help="labelled runs (step-list or trace files, or a folder of them), or a scenario corpus directory")
    parser.add_argument("--judge", metavar="MODEL", help="evaluate the LLM judge with this litellm model")
    parser.add_argument("--judge-api-base", metavar="URL", help="OpenAI-compatible endpoint for the judge model")
    parser.add_argument("--with-rules", action="store_true", help="with --judge: score rules and judge combined")
    parser.add_argument("--format", choices=("table", "json"), default="table",
                        help="table for reading, json for scripts (default table)")
    parser.add_argument("--config", metavar="PATH", help="processor YAML; its detection and judge sections are used")
    parser.add_argument("--accept-suspect-labels", action="store_true",
                        help="print agreement figures even when the label checks fail (they are then not accuracy)")
    parser.add_argument("--label-split", choices=("ours", "swapped"), default="ours",
                        help="how the labels split FM-3.2/FM-3.3: ours (3.2 no or incomplete check, 3.3 wrong check) "
                             "or swapped (the other way round); swapped labels are mapped onto ours")
    parser.add_argument("--resamples", type=number_at_least(1), default=DEFAULT_RESAMPLES, metavar="N",
                        help="bootstrap resamples for the F1 and kappa intervals")


def load_labelled(paths: Iterable[str], report: LoadReport) -> list[Run]:
    """Every run in ``paths`` (files, corpus directories and folders of files), in order.

    A folder without ``labels.json`` stands for its ``.json`` files, in name order: labelled
    data sets such as Who&When ship as one folder of logs."""
    runs: list[Run] = []
    files: list[str] = []
    for path in paths:
        if is_corpus(path):
            runs.extend(load_corpus(path, report))
        elif Path(path).is_dir():
            files.extend(str(p) for p in sorted(Path(path).glob("*.json")) if p.is_file())
        else:
            files.append(path)
    if files:
        runs.extend(load(files, report))
    return runs


def rule_findings_by_run(runs: Iterable[Run], config: ProcessorConfig,
                         known: Mapping[str, list[Finding]] | None = None) -> dict[str, list[Finding]]:
    """Each run's rule findings, beside those ``known`` already: deriving its hints changes a run,
    so a run scored for both attribution and modes is diagnosed once, as one run."""
    from mast_otel.processors.detectors import rule_findings

    known = known or {}
    return {**known, **{run.trace_id: rule_findings(run, config.detection, config.hints)
                        for run in runs if run.trace_id not in known}}


def rule_predictions(findings: dict[str, list[Finding]]) -> dict[str, set[str]]:
    return {trace_id: {f.mode for f in found} for trace_id, found in findings.items()}


def judge_predictions(runs: list[Run], judge_config) -> tuple[dict[str, set[str]], dict[str, str]]:
    """Judge verdicts per run, and the error for each run the judge could not diagnose."""
    from mast_otel.processors.judge.batch import judge_runs

    verdicts: dict[str, set[str]] = {}
    errors: dict[str, str] = {}
    for run, result in judge_runs(runs, judge_config):
        if isinstance(result, Exception):
            errors[run.trace_id] = str(result)
        else:
            verdicts[run.trace_id] = {f.mode for f in result}
    return verdicts, errors


def evaluate(runs: list[Run], predictions: dict[str, set[str]], covered: Iterable[str],
             resamples: int = DEFAULT_RESAMPLES) -> Scores:
    pairs = [(run.labels["modes"], predictions[run.trace_id]) for run in runs if run.trace_id in predictions]
    return score(pairs, taxonomy.MODE_IDS, [m for m in taxonomy.MODE_IDS if m in set(covered)], resamples=resamples)


def label_rows(runs: Iterable[Run]) -> list[LabelRow]:
    return [LabelRow(str(r.labels.get("group") or ""), r.labels.get("order", i), r.labels.get("scenario") or r.hints.task,
                     tuple(bool(r.labels["modes"].get(m)) for m in taxonomy.MODE_IDS))
            for i, r in enumerate(runs)]


def attribution_cases(runs: Iterable[Run], findings: dict[str, list[Finding]], config: ProcessorConfig) -> list[AttributionCase]:
    """Each labelled run's attribution from the rule findings, beside its label.

    A label names its step by position in a log (Who&When: the speakers are the log's) or by
    span id (a corpus recording: the speakers are the agents of the run's steps)."""
    from mast_otel.processors.attribution import attribute, step_agent

    cases = []
    for run in runs:
        label = run.labels["attribution"]
        who = attribute(run, findings[run.trace_id], config.detection.severity_overrides)
        step: str | int | None
        if isinstance(label["step"], str):
            speakers, keys = tuple(step_agent(run, s) for s in run.steps), tuple(s.span_id for s in run.steps)
            step = who.step_span_id if who else None
        else:
            speakers, keys, step = tuple(run.labels.get("history", ())), (), who.step_index if who else None
        cases.append(AttributionCase(label["agent"], label["step"], speakers, who.agent if who else None, step, keys))
    return cases


def run(args: argparse.Namespace) -> int:
    report = LoadReport()
    loaded = load_labelled(args.files, report)  # unreadable files and bad configs raise UsageError
    config = processor_config(args.config)
    runs, attributed = [], []
    for r in loaded:
        if "modes" in r.labels:
            r.labels["modes"] = to_our_split(r.labels["modes"], args.label_split)
            runs.append(r)
        if "attribution" in r.labels:
            attributed.append(r)
        if "modes" not in r.labels and "attribution" not in r.labels:
            report.skipped.append(f"trace {r.trace_id}: no mode or attribution labels")
    if not runs and not attributed:
        raise UsageError(f"no labelled runs in the given files (expected mast_annotation, labels.modes, "
                         f"a Who&When log or a corpus directory with labels.json); {report.summary()}")
    result: dict = {"input": report.as_dict()}
    findings = rule_findings_by_run(attributed, config)
    attributed = resolve_steps(attributed, report)
    result["input"] = report.as_dict()  # with the labels that located no step
    if attributed:
        if args.judge:
            print("mast-otel eval: attribution is scored from the rule findings; --judge is not used for it",
                  file=sys.stderr)
        result["attribution"] = score_attribution(attribution_cases(attributed, findings, config))
    if not runs:
        sys.stdout.write(json.dumps(result, indent=2) + "\n" if args.format == "json"
                         else f"{report.summary()}\n" + attribution_table(result["attribution"]))
        return 0
    checks = check_labels(label_rows(runs), taxonomy.MODE_IDS)
    if checks.suspect:
        for check in checks.suspect:
            print(f"mast-otel eval: WARNING: suspect labels ({check.name}): {check.detail}", file=sys.stderr)
        if not args.accept_suspect_labels:
            print("mast-otel eval: these labels do not look like the runs' own; agreement with them is not accuracy, "
                  "so no figures are printed (--accept-suspect-labels prints them anyway)", file=sys.stderr)
            if args.format == "json":
                sys.stdout.write(json.dumps({**result, "labels": checks.as_dict()}, indent=2) + "\n")
            return SUSPECT_EXIT
    errors: dict[str, str] = {}
    if args.judge:
        update = {"model": args.judge, **({"api_base": args.judge_api_base} if args.judge_api_base else {})}
        judge_config = config.judge.model_copy(update=update)
        if judge_config.api_key is None:
            from mast_otel.processors.credentials import require_credentials

            require_credentials(judge_config.model, "--judge")
        from mast_otel.processors.judge.prompt import version

        predictions, errors = judge_predictions(runs, judge_config)
        covered = [m.id for m in taxonomy.MODES.values() if "judge" in m.covered_by]
        source = "judge"
        result["judge_prompt_version"] = version()
        if args.with_rules:
            rules = rule_predictions(rule_findings_by_run(runs, config, findings))
            predictions = {tid: modes | rules[tid] for tid, modes in predictions.items()}
            covered, source = list(taxonomy.MODE_IDS), "rules+judge"
    else:
        predictions = rule_predictions(rule_findings_by_run(runs, config, findings))
        covered = [m.id for m in taxonomy.MODES.values() if "rules" in m.covered_by]
        source = "rules"
    report.skipped.extend(f"trace {tid}: the judge failed: {err}" for tid, err in errors.items())
    scores = evaluate(runs, predictions, covered, args.resamples)
    result.update({"source": source, "input": report.as_dict(), "runs": len(runs), "scored_runs": len(runs) - len(errors),
                   "errors": errors, "labels": checks.as_dict(), "accuracy": not checks.suspect, **scores.as_dict()})
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    else:
        sys.stdout.write(as_table(result, report) + (attribution_table(result["attribution"]) if attributed else ""))
    return 0


def attribution_table(result: dict) -> str:
    def cell(entry: dict | None) -> str:
        if entry is None or entry["accuracy"] is None:
            return "-"
        ci = entry["ci"]
        return f"{entry['accuracy']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}] ({entry['hits']}/{entry['runs']})"

    rows = [["rules (decisive step)", cell(result["attribution"]["agent"]), cell(result["attribution"]["step"])],
            ["rules, on the runs they attributed", cell(result["on_attributed_runs"]["agent"]),
             cell(result["on_attributed_runs"]["step"])]]
    rows += [[f"baseline: {name}", cell(b.get("agent")), cell(b.get("step"))] for name, b in result["baselines"].items()]
    cov = result["coverage"]
    return (f"attribution on {result['runs']} runs labelled with the agent at fault; the rules attributed {cov['hits']} "
            f"(a run with none counts as wrong)\n" + text_table(["attribution", "agent accuracy", "step accuracy"], rows)
            + f"\nintervals: {result['intervals']}\n")


def _fig(value: float | None, ci: list[float] | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def as_table(result: dict, report: LoadReport) -> str:
    covered = set(result["macro_modes"])
    rows = []
    for m, c in result["modes"].items():
        if not c["scored"]:
            continue
        rows.append([m + ("" if m in covered else " *"), taxonomy.MODES[m].name,
                     *(_fig(c[k], c[f"{k}_ci"]) for k in ("precision", "recall", "f1", "kappa")), c["support"], c["predicted"]])
    macro = result["macro"]
    rows.append(["macro", f"({len(covered)} modes)", *(_fig(macro[k], macro[f"{k}_ci"]) for k in ("precision", "recall", "f1", "kappa")),
                 "", ""])
    table = text_table(["mode", "name", "precision", "recall", "F1", "kappa", "support", "predicted"], rows)
    head = [f"{result['source']}: {report.summary()}; {result['scored_runs']} of {result['runs']} labelled runs scored"]
    head += [f"  duplicate: {d}" for d in report.duplicates[:10]]
    head += [f"  skipped: {s}" for s in report.skipped[:10]]
    if len(report.skipped) > 10:
        head.append(f"  ... and {len(report.skipped) - 10} more skipped")
    if not result["accuracy"]:
        head.append("AGREEMENT WITH SUSPECT LABELS, NOT ACCURACY (label checks: "
                    + ", ".join(result["labels"]["suspect"]) + ")")
    unscored = [m for m, c in result["modes"].items() if not c["scored"]]
    notes = [f"modes with no support and no predictions (not scored): {', '.join(unscored)}"] if unscored else []
    notes += [n for n in result["labels"]["notes"]]
    if any(c["scored"] and m not in covered for m, c in result["modes"].items()):
        notes.append("* scored but outside the macro: the detector does not claim this mode")
    notes.append(f"intervals: {result['intervals']}")
    return "\n".join(head) + "\n" + table + "\n" + "\n".join(notes) + "\n"
