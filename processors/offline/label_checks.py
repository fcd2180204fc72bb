"""Sanity checks on a labelled data set, run by ``eval`` before it calls anything accuracy.

Labels can be wrong as a whole: MAST-Data's step lists carry, at row k of every sub-dataset,
the same 14-mode vector whatever the model or task, so agreement with them measures nothing.
These checks look for that shape without knowing the data set:

- ``repeated_sequences``: two groups (sub-datasets: framework, benchmark, model), each sorted
  by its own record key, whose label vectors match position by position far beyond what the
  vectors' frequencies give by chance, at positions that hold different tasks (a corpus that
  records the same scenarios in every group is rightly aligned and is not compared);
- ``labels_follow_position``: runs of different groups at the same position agree on their
  labels far more often than runs of different groups on the same task, i.e. the labels
  follow the row, not the content;
- ``constant_columns``: a mode labelled present on every run, or every run carrying the same
  vector (modes labelled absent everywhere are only noted: common and harmless).

Pure functions over :class:`LabelRow`; thresholds are module constants, stated in the report.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Sequence

MIN_GROUP = 10  # groups smaller than this are not compared
MATCH_SUSPECT = 0.8  # aligned match rate at or above this ...
MARGIN = 0.3  # ... and this far above chance (or above same-task agreement) is suspect
MIN_TASK_PAIRS = 5
MIN_ROWS = 10


@dataclass(frozen=True, slots=True)
class LabelRow:
    group: str  # the sub-data-set the record came from
    order: str | int  # the record's key inside its group (sorts the group)
    task: str | None  # what the run was about (task text, scenario): same task, same labels expected
    vector: tuple[bool, ...]  # one entry per mode, in a fixed order


@dataclass(slots=True)
class CheckResult:
    name: str
    suspect: bool
    detail: str


@dataclass(slots=True)
class LabelReport:
    checks: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def suspect(self) -> list[CheckResult]:
        return [c for c in self.checks if c.suspect]

    def as_dict(self) -> dict:
        return {"suspect": [c.name for c in self.suspect], "notes": list(self.notes),
                "checks": [{"name": c.name, "suspect": c.suspect, "detail": c.detail} for c in self.checks]}


def _sort_key(order: str | int) -> tuple[int, float | str]:
    return (0, order) if isinstance(order, (int, float)) else (1, str(order))


def _groups(rows: Sequence[LabelRow]) -> dict[str, list[LabelRow]]:
    groups: dict[str, list[LabelRow]] = defaultdict(list)
    for row in rows:
        groups[row.group].append(row)
    return {g: sorted(rs, key=lambda r: _sort_key(r.order)) for g, rs in groups.items() if len(rs) >= MIN_GROUP}


def repeated_sequences(rows: Sequence[LabelRow]) -> CheckResult:
    groups = _groups(rows)
    worst: tuple[float, float, str, str, int] | None = None
    for (ga, ra), (gb, rb) in combinations(sorted(groups.items()), 2):
        positions = [i for i in range(min(len(ra), len(rb))) if not ra[i].task or ra[i].task != rb[i].task]
        if len(positions) < MIN_GROUP:
            continue
        n = len(positions)
        aligned = sum(ra[i].vector == rb[i].vector for i in positions) / n
        fa, fb = Counter(r.vector for r in ra), Counter(r.vector for r in rb)
        chance = sum(fa[v] / len(ra) * fb[v] / len(rb) for v in fa)
        if worst is None or aligned - chance > worst[0] - worst[1]:
            worst = (aligned, chance, ga, gb, n)
    if worst is None:
        return CheckResult("repeated_sequences", False,
                           f"not run: no two groups with {MIN_GROUP} or more aligned records on different tasks")
    aligned, chance, ga, gb, n = worst
    suspect = aligned >= MATCH_SUSPECT and aligned - chance >= MARGIN
    return CheckResult("repeated_sequences", suspect,
                       f"groups {ga!r} and {gb!r}, each sorted by record key: {aligned:.0%} of {n} positions carry the "
                       f"same label vector, on different tasks (chance from the vectors' frequencies: {chance:.0%})")


def labels_follow_position(rows: Sequence[LabelRow]) -> CheckResult:
    groups = _groups(rows)
    by_task: dict[str, list[LabelRow]] = defaultdict(list)
    for rs in groups.values():
        for r in rs:
            if r.task:
                by_task[r.task.strip()].append(r)
    task_pairs = [(a, b) for rs in by_task.values() for a, b in combinations(rs, 2) if a.group != b.group]
    position_pairs = [(ra[i], rb[i]) for (_, ra), (_, rb) in combinations(sorted(groups.items()), 2)
                      for i in range(min(len(ra), len(rb))) if not ra[i].task or ra[i].task != rb[i].task]
    if len(task_pairs) < MIN_TASK_PAIRS or not position_pairs:
        return CheckResult("labels_follow_position", False,
                           f"not run: fewer than {MIN_TASK_PAIRS} pairs of groups sharing a task")
    same_position = sum(a.vector == b.vector for a, b in position_pairs) / len(position_pairs)
    same_task = sum(a.vector == b.vector for a, b in task_pairs) / len(task_pairs)
    suspect = same_position >= MATCH_SUSPECT and same_position - same_task >= MARGIN
    return CheckResult("labels_follow_position", suspect,
                       f"records of different groups agree on all labels {same_position:.0%} of the time at the same "
                       f"position on different tasks ({len(position_pairs)} pairs) but {same_task:.0%} on the same task "
                       f"({len(task_pairs)} pairs)")


def constant_columns(rows: Sequence[LabelRow], modes: Sequence[str]) -> tuple[CheckResult, list[str]]:
    if len(rows) < MIN_ROWS:
        return CheckResult("constant_columns", False, f"not run: fewer than {MIN_ROWS} labelled records"), []
    always = [m for j, m in enumerate(modes) if all(r.vector[j] for r in rows)]
    never = [m for j, m in enumerate(modes) if not any(r.vector[j] for r in rows)]
    one_vector = len({r.vector for r in rows}) == 1
    suspect = bool(always) or one_vector
    detail = ("every record carries the same label vector" if one_vector
              else f"labelled present on every record: {', '.join(always)}" if always
              else "no mode is labelled present on every record")
    notes = [f"never labelled present (scores there measure only false alarms): {', '.join(never)}"] if never else []
    return CheckResult("constant_columns", suspect, detail), notes


def check_labels(rows: Sequence[LabelRow], modes: Sequence[str]) -> LabelReport:
    """Every check on ``rows``; ``report.suspect`` names the ones that fired."""
    constant, notes = constant_columns(rows, modes)
    return LabelReport([repeated_sequences(rows), labels_follow_position(rows), constant], notes)
