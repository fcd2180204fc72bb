"""False pages: what the rule tier raises on runs whose labels say the mode is not there, per mode,
severity and corpus, with the labelled modes it misses.

    .venv/bin/python benchmarks/bench_false_pages.py [--corpus NAME ... | --real] [--baseline REF] [--markdown | --json]
    .venv/bin/python benchmarks/bench_false_pages.py --real --write-docs      # the table in docs/detection.md

Every labelled corpus is diagnosed as the service diagnoses a run (hints derived, then the rule
detectors: ``rule_findings`` over what ``load_runs`` reads; runs of one file that carry one session
id are also diagnosed together as turns of a session). A finding is counted once per labelled item
(a recording, a labelled file) and mode:

- right: the labels say the item shows the mode;
- false page: the labels say it does not (what an alert on that mode would page on for nothing);
- debatable: the labels name the mode as one a reasonable reader might add, counted apart;
- unjudged: the corpus's labels cannot name that mode at all (trail-dev maps only seven modes);
- missed: a mode the labels say is there and the rules are expected to find, not found.

Precision is right / (right + false pages); recall is found / expected. The modes the shipped alert
rules page on (deploy/prometheus/rules/mast-alerts.yml: FM-1.5 and FM-3.1 for termination,
FM-3.2 and FM-3.3 for verification) come first, then every mode; severities are the registry's
defaults (processors/taxonomy.py).

Corpora: the repository's recorded scenarios (tests/frameworks, teams, typescript and sessions
``corpus``: labelled by construction, every other mode absent; content and no-content apart), and
the real runs beside the repository, read where they lie: real-corpus (``modes`` and
``debatable_modes``; ``MAST_TESTS_REAL_CORPUS``) and trail-dev (``modes``; recall counts only
``rule_modes``, since ``content_modes`` are left to the judge; ``MAST_TESTS_TRAIL_DEV``). Left out:
Who&When (its labels name the responsible agent and step, no mode) and the MAST-Data AG2 labels
(they do not belong to their traces: the same label vectors row by row across sub-datasets).

``--baseline REF`` runs this same file in a child process against git revision REF of the product
(exported with ``git archive`` and imported ahead of the installed package; the corpora and labels
stay this checkout's) and prints each figure as ``before→after``. ``--markdown`` prints the per-mode
tables as markdown, ``--write-docs`` also writes them (real runs only, this tree alone) into
docs/detection.md between the ``bench_false_pages`` markers; ``--json`` prints the counts for machines.
All corpora take about five seconds; a baseline adds its export and a second pass.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from functools import partial
from typing import Callable, Iterable, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from docblock import write_doc_block  # noqa: E402
from mast_otel.processors import taxonomy  # noqa: E402
from mast_otel.processors.ingest.files import LoadError, load_runs  # noqa: E402
from mast_otel.processors.model import Run  # noqa: E402

try:
    from mast_otel.processors.detectors import rule_findings
except ImportError:  # a baseline from before the detectors package exported it
    from mast_otel.processors.hints import rule_findings

SHARED = ROOT / ".." / "shared"
REAL_CORPUS = Path(os.environ.get("MAST_TESTS_REAL_CORPUS") or SHARED / "real-corpus")
TRAIL_DEV = Path(os.environ.get("MAST_TESTS_TRAIL_DEV") or SHARED / "trail-dev")
ALERTING = ("FM-1.5", "FM-3.1", "FM-3.2", "FM-3.3")
OTHERS = tuple(m for m in taxonomy.MODE_IDS if m not in ALERTING)
ALL_MODES = frozenset(taxonomy.MODE_IDS)
# The modes trail-dev's mapping from TRAIL's error categories can produce (its README): only these
# can be said to be absent from a run; a finding of another mode there is unjudged.
TRAIL_MAPPED = frozenset({"FM-1.1", "FM-1.3", "FM-1.4", "FM-1.5", "FM-2.3", "FM-3.1", "FM-3.2"})
SCENARIO_CORPORA = ("frameworks", "teams", "typescript")
REAL = ("real-corpus", "trail-dev")
DOC = ROOT / "docs" / "detection.md"
LEFT_OUT = {
    "who-and-when": "labels name the agent and step of the decisive mistake, not a failure mode",
    "mast-ag2": "its labels do not belong to its traces (the same label vectors row by row across sub-datasets)",
}


@dataclass(frozen=True)
class Item:
    """One labelled unit (a recording, a labelled file) and what its labels say."""

    id: str
    path: Path
    labelled: frozenset[str]  # modes the item shows: finding one is right
    expected: frozenset[str]  # of those, the ones the rules are expected to find: recall counts these
    debatable: frozenset[str] = frozenset()  # a reasonable reader might add them: counted apart


@dataclass(frozen=True)
class Corpus:
    name: str
    judged: frozenset[str]  # modes whose absence the labels state
    measures: str  # what its figures measure, and what not
    items: tuple[Item, ...]


@dataclass
class Counts:
    labelled: int = 0
    expected: int = 0
    right: int = 0
    caught: int = 0  # expected and found
    missed: int = 0
    false: int = 0
    debatable: int = 0
    unjudged: int = 0

    def add(self, other: Counts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def precision(self) -> float | None:
        return self.right / (self.right + self.false) if self.right + self.false else None

    @property
    def recall(self) -> float | None:
        return self.caught / self.expected if self.expected else None

    @property
    def empty(self) -> bool:
        return not (self.labelled or self.right or self.false or self.debatable or self.unjudged)


@dataclass
class Figures:
    """One corpus diagnosed by one build: per mode, the counts."""

    corpus: str
    items: int
    modes: dict[str, Counts] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)  # items this build could not read (nothing found on them)


# --- the corpora and their labels ------------------------------------------------------------------


def _recordings(directory: Path, variant: str) -> Iterator[Path]:
    for framework in sorted(p for p in directory.iterdir() if p.is_dir()):
        folder = framework / "no-content" if variant == "no-content" else framework
        # a run's log records (<scenario>.logs.json) lie beside it: not a recording of their own
        yield from (p for p in sorted(folder.glob("*.json")) if p.name != "manifest.json" and not p.name.endswith(".logs.json"))


def scenario_corpus(name: str, directory: Path, variant: str) -> Corpus:
    """A recorded scenario corpus (``labels.json``: per scenario ``expected``, ``allowed`` and, for
    teams, ``content_only`` modes, which a no-content recording is not expected to show)."""
    scenarios = json.loads((directory / "labels.json").read_text(encoding="utf-8"))["scenarios"]
    items = []
    for path in _recordings(directory, variant):
        spec = scenarios[path.stem]
        expected = frozenset(spec["expected"])
        hidden = frozenset(spec.get("content_only", ())) if variant == "no-content" else frozenset()
        items.append(Item(str(path.relative_to(directory)), path, expected, expected - hidden, frozenset(spec["allowed"])))
    measures = ("scripted slips through the framework's own instrumentation, labelled by construction: every mode "
                "not expected or allowed is absent, so every finding is judged")
    if variant == "no-content":
        measures += "; without content recall is what the spans still show, not a target"
    return Corpus(f"{name}/{variant}", ALL_MODES, measures, tuple(items))


def session_corpus(directory: Path, variant: str) -> Corpus:
    """The session corpus: each recording one conversation whose turns are clean runs on their own;
    its labelled modes show only across turns, where the turns share a session id on their spans."""
    sessions = json.loads((directory / "labels.json").read_text(encoding="utf-8"))["sessions"]
    items = []
    for path in _recordings(directory, variant):
        framework = path.parent.parent.name if variant == "no-content" else path.parent.name
        modes = frozenset(e["mode"] for e in sessions[f"{framework}/{variant}/{path.stem}"]["session_expected"])
        items.append(Item(str(path.relative_to(directory)), path, modes, modes))
    return Corpus(f"sessions/{variant}", ALL_MODES,
                  "conversations of separate turns, labelled by construction; a session is diagnosed only where its "
                  "turns carry a session id, as in the service", tuple(items))


def real_corpus(directory: Path) -> Corpus:
    labels = json.loads((directory / "labels.json").read_text(encoding="utf-8"))
    items = tuple(Item(e["id"], directory / e["file"], frozenset(e["modes"]), frozenset(e["modes"]),
                       frozenset(e.get("debatable_modes", ()))) for e in labels)
    return Corpus("real-corpus", ALL_MODES,
                  "real model output replayed from frameworks' own cassettes, every mode labelled by reading the run "
                  "(debatable modes apart); a labelled mode the instrumentation leaves no trace of counts as missed",
                  items)


def trail_dev(directory: Path) -> Corpus:
    labels = json.loads((directory / "labels.json").read_text(encoding="utf-8"))["runs"]
    items = tuple(Item(e["id"], directory / e["file"], frozenset(e["modes"]), frozenset(e["rule_modes"])) for e in labels)
    return Corpus("trail-dev", TRAIL_MAPPED,
                  "real smolagents runs with people's error labels mapped to MAST; the labels are not exhaustive, so a "
                  "false page is an upper bound; recall counts only rule_modes (content_modes are left to the judge); "
                  "modes the mapping cannot produce are unjudged", items)


def corpora(names: Iterable[str] | None = None) -> tuple[list[Corpus], dict[str, str]]:
    """The corpora asked for (all by default) and, by name, why any was not read."""
    makers: dict[str, tuple[Path, Callable[[Path], Corpus]]] = {}
    for variant in ("content", "no-content"):
        for name in SCENARIO_CORPORA:
            makers[f"{name}/{variant}"] = (ROOT / "tests" / name / "corpus", partial(scenario_corpus, name, variant=variant))
        makers[f"sessions/{variant}"] = (ROOT / "tests" / "sessions" / "corpus", partial(session_corpus, variant=variant))
    makers["real-corpus"] = (REAL_CORPUS, real_corpus)
    makers["trail-dev"] = (TRAIL_DEV, trail_dev)
    wanted = list(names) if names else list(makers)
    found: list[Corpus] = []
    absent: dict[str, str] = {}
    for name in wanted:
        if name not in makers:
            raise SystemExit(f"unknown corpus {name!r}; known: {', '.join(makers)}")
        directory, make = makers[name]
        if (directory / "labels.json").is_file():
            found.append(make(directory))
        else:
            absent[name] = f"{directory} is not on this machine"
    return found, absent


# --- diagnosis and counting ------------------------------------------------------------------------


def session_modes(runs: list[Run]) -> set[str]:
    """Cross-turn findings over the runs that share a session id (a build without sessions finds none)."""
    try:
        from mast_otel.processors.conversations.diagnose import diagnose_session
        from mast_otel.processors.conversations.ids import session_id_of
        from mast_otel.processors.conversations.model import Turn
    except ImportError:
        return set()
    sessions: dict[str, list[Run]] = {}
    for run in runs:
        if (session_id := session_id_of(run)) is not None:
            sessions.setdefault(session_id, []).append(run)
    found = set()
    for session_id, turns in sessions.items():
        turns.sort(key=lambda run: min((s.start_ns for s in run.spans), default=0))
        found |= {f.mode for f in diagnose_session([Turn(session_id, run) for run in turns])}
    return found


def modes_found(path: Path) -> set[str]:
    """Every mode the rule tier raises on the runs of one file (hints derived first, as in the service)."""
    runs = list(load_runs([path]))
    found = {f.mode for run in runs for f in rule_findings(run)}
    return found | session_modes(runs)


def tally(corpus: Corpus, found: dict[str, set[str]]) -> Figures:
    """Per mode, the counts for ``corpus`` given the modes found on each item (by item id)."""
    figures = Figures(corpus.name, len(corpus.items), {mode: Counts() for mode in taxonomy.MODE_IDS})
    for item in corpus.items:
        modes = found.get(item.id, set())
        for mode, counts in figures.modes.items():
            hit = mode in modes
            counts.labelled += mode in item.labelled
            counts.expected += mode in item.expected
            counts.caught += hit and mode in item.expected
            counts.missed += not hit and mode in item.expected
            if hit:
                if mode in item.labelled:
                    counts.right += 1
                elif mode not in corpus.judged:
                    counts.unjudged += 1
                elif mode in item.debatable:
                    counts.debatable += 1
                else:
                    counts.false += 1
    return figures


def measure(corpus: Corpus) -> Figures:
    found, unreadable = {}, []
    for item in corpus.items:
        try:
            found[item.id] = modes_found(item.path)
        except LoadError:  # an older build may not read a file (a baseline before gzip was read)
            unreadable.append(item.id)
    figures = tally(corpus, found)
    figures.unreadable = unreadable
    return figures


def by_severity(figures: Figures, modes: Iterable[str]) -> dict[str, Counts]:
    out: dict[str, Counts] = {}
    for mode in modes:
        out.setdefault(taxonomy.MODES[mode].severity, Counts()).add(figures.modes[mode])
    return {s: out[s] for s in taxonomy.SEVERITIES if s in out}


def to_json(all_figures: list[Figures]) -> dict:
    return {f.corpus: {"items": f.items, "unreadable": f.unreadable,
                       "modes": {m: {"severity": taxonomy.MODES[m].severity, **vars(c), "precision": c.precision,
                                     "recall": c.recall} for m, c in f.modes.items()}}
            for f in all_figures}


def from_json(data: dict) -> list[Figures]:
    fields = Counts.__dataclass_fields__
    return [Figures(name, body["items"], {m: Counts(**{k: v for k, v in c.items() if k in fields}) for m, c in body["modes"].items()},
                    body["unreadable"])
            for name, body in data.items()]


# --- the baseline -----------------------------------------------------------------------------------


def baseline_figures(revision: str, names: list[str]) -> tuple[list[Figures], str]:
    """This file run against ``revision``'s product in a child process: its figures and the package it imported."""
    from bench_memory_account import export_tree  # the same git-archive export, kept in one place

    with tempfile.TemporaryDirectory() as tmp:
        site = export_tree(revision, Path(tmp))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        command = [sys.executable, str(Path(__file__).resolve()), "--json", *(a for n in names for a in ("--corpus", n))]
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"the baseline run failed:\n{done.stderr[-4000:]}")
        data = json.loads(done.stdout)
        if not Path(data["product"]).resolve().is_relative_to(Path(tmp).resolve()):
            raise SystemExit(f"the baseline run imported {data['product']}, not {revision}'s export")
        return from_json(data["corpora"]), data["product"]


# --- output -----------------------------------------------------------------------------------------


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _cell(after: Counts, before: Counts | None, key: str) -> str:
    """A count or ratio, as ``before→after`` where a baseline differs."""
    fmt = _ratio if key in ("precision", "recall") else str
    now = fmt(getattr(after, key))
    if before is None:
        return now
    then = fmt(getattr(before, key))
    return now if then == now else f"{then}→{now}"


COLUMNS = (("labelled", "labelled"), ("expected", "expected of rules"), ("right", "found right"), ("missed", "missed"), ("false", "false pages"),
           ("debatable", "debatable"), ("unjudged", "unjudged"), ("precision", "precision"), ("recall", "recall"))


def rows(after: list[Figures], before: dict[str, Figures], modes: Iterable[str], totals: Iterable[str],
         totals_name: str) -> list[list[str]]:
    """Mode x corpus rows (those with anything labelled or found), then severity x corpus rows summed over ``totals``."""
    modes, totals = list(modes), list(totals)
    out = []
    for mode in modes:
        for figures in after:
            counts, then = figures.modes[mode], before.get(figures.corpus)
            old = then.modes[mode] if then else None
            if counts.empty and (old is None or old.empty):
                continue
            out.append([mode, taxonomy.MODES[mode].severity, figures.corpus, *(_cell(counts, old, k) for k, _ in COLUMNS)])
    for figures in after:
        then = before.get(figures.corpus)
        old_sev = by_severity(then, totals) if then else {}
        for severity, counts in by_severity(figures, totals).items():
            old = old_sev.get(severity)
            if counts.empty and (old is None or old.empty):
                continue
            out.append([totals_name, severity, figures.corpus, *(_cell(counts, old, k) for k, _ in COLUMNS)])
    return out


HEADER = ["mode", "severity", "corpus", *(title for _, title in COLUMNS)]


def text_table(table: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEADER, *table]) for i in range(len(HEADER))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [HEADER, *table])


def markdown_table(table: list[list[str]]) -> str:
    return "\n".join(["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER),
                      *("| " + " | ".join(r) + " |" for r in table)])


def report(corpora_read: list[Corpus], after: list[Figures], before: dict[str, Figures], absent: dict[str, str],
           baseline: str | None) -> str:
    compared = f" (before→after: {baseline} → this tree)" if baseline else ""
    parts = [f"False pages and misses of the rule tier{compared}; items are recordings or labelled files.",
             "Alerting modes (what the shipped alert rules page on), with their totals per severity:",
             text_table(rows(after, before, ALERTING, ALERTING, "alerting modes")),
             "The other modes, with the totals per severity over all fourteen:",
             text_table(rows(after, before, OTHERS, taxonomy.MODE_IDS, "all modes")), "What each corpus measures:"]
    parts += [f"  {c.name} ({len(c.items)} items): {c.measures}" for c in corpora_read]
    parts += [f"  {name}: not read: {why}" for name, why in {**absent, **LEFT_OUT}.items()]
    for label, figures in (("this tree", after), (baseline, list(before.values()))):
        parts += [f"  {label} could not read {len(f.unreadable)} items of {f.corpus} (nothing counted as found on them): "
                  f"{', '.join(f.unreadable[:3])}{' ...' if len(f.unreadable) > 3 else ''}" for f in figures if f.unreadable]
    return "\n".join(parts)


def markdown(after: list[Figures], before: dict[str, Figures], absent: dict[str, str], baseline: str | None) -> str:
    parts = [f"Before→after: {baseline} → this tree." if baseline else "",
             "**Alerting modes** (the shipped alert rules page on FM-1.5 and FM-3.1, termination, and on FM-3.2 and "
             "FM-3.3, verification), with their totals per severity:",
             markdown_table(rows(after, before, ALERTING, ALERTING, "alerting modes")),
             "**The other modes**, with the totals per severity over all fourteen:",
             markdown_table(rows(after, before, OTHERS, taxonomy.MODE_IDS, "all modes"))]
    parts += [f"Not read: {name} ({why})." for name, why in absent.items()]
    parts += [f"{label} could not read {len(f.unreadable)} items of {f.corpus}: nothing is counted as found on them."
              for label, figures in (("This tree", after), (baseline, list(before.values()))) for f in figures if f.unreadable]
    return "\n\n".join(p for p in parts if p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", help="a corpus by name (repeatable; default all)")
    parser.add_argument("--real", action="store_true", help="only the real runs beside the repository: " + ", ".join(REAL))
    parser.add_argument("--baseline", metavar="REF", help="a git revision whose product to compare with")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--markdown", action="store_true", help="the per-mode table for the docs")
    output.add_argument("--json", action="store_true", help="counts per corpus and mode, for machines")
    output.add_argument("--write-docs", action="store_true", help=f"print the markdown and write it into {DOC.name}")
    args = parser.parse_args()
    if args.write_docs and (args.baseline or args.corpus or not args.real):
        parser.error("--write-docs writes the real runs' figures of this tree alone: use it with --real only")
    read, absent = corpora([*(args.corpus or ()), *(REAL if args.real else ())])
    after = [measure(c) for c in read]
    before: dict[str, Figures] = {}
    if args.baseline:
        figures, baseline_product = baseline_figures(args.baseline, [c.name for c in read])
        before = {f.corpus: f for f in figures}
    if args.json:
        import mast_otel.processors as product

        document: dict[str, object] = {"product": str(Path(product.__file__).resolve().parent), "corpora": to_json(after),
                                       "not_read": {**absent, **LEFT_OUT}}
        if args.baseline:
            document["baseline"] = {"revision": args.baseline, "product": baseline_product,
                                    "corpora": to_json(list(before.values()))}
        print(json.dumps(document, indent=1))
    elif args.markdown or args.write_docs:
        body = markdown(after, before, absent, args.baseline)
        print(body)
        if args.write_docs:
            if absent:
                raise SystemExit("not written: a corpus is not on this machine")
            write_doc_block("bench_false_pages", body, DOC)
    else:
        print(report(read, after, before, absent, args.baseline))


if __name__ == "__main__":
    main()
