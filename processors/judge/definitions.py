"""What the judge is told each MAST mode means, in this project's words, with worked examples.

The rules' registry describes each mode by the signals rules can see (a step budget, a failed
check); the judge reads whole conversations and needs the taxonomy's full meaning, as the
MAST paper ("Why Do Multi-Agent LLM Systems Fail?", arXiv 2503.13657) defines it. These
definitions follow that meaning and are written here, not copied.

The 3.2/3.3 split. Here, as in the registry: FM-3.2 is verification that is missing or does
not cover what matters; FM-3.3 is verification that was done and reached the wrong verdict.
Some label sets put "no verification" under 3.3 and a wrong check under 3.2 (the MAST judge's
labels in MAST-Data do, per our reading of them); :data:`SPLITS` maps such labels onto ours
before anything compares them.
"""

from __future__ import annotations

from typing import Mapping

JUDGE_DEFINITIONS: dict[str, str] = {
    "FM-1.1": "An agent does not do what the task asked: it breaks an explicit requirement or constraint of "
              "the request (the form of the answer, a limit, a rule it was given), or solves a different problem "
              "than the one posed.",
    "FM-1.2": "An agent acts outside the part it was given in the team: it takes over another agent's job, "
              "ignores the limits of its role, or speaks for a role that is not its own.",
    "FM-1.3": "Work already done is done again without need: the same step, question or computation is "
              "repeated although nothing changed that would make the repeat useful. Polling something that "
              "is still changing, or retrying after a failure with a fix, is not repetition.",
    "FM-1.4": "An agent loses track of what was already said or established: it acts as if earlier turns, "
              "results or decisions had not happened and falls back to an earlier state of the work.",
    "FM-1.5": "The system does not recognise when it should stop: it keeps going after the task is complete, "
              "loops until an external limit ends it, or never reaches the stopping point it was told about.",
    "FM-2.1": "The conversation restarts without reason: the agents begin again from scratch, discarding the "
              "progress and context they had.",
    "FM-2.2": "An agent proceeds on a guess where the request is unclear, ambiguous or missing information it "
              "needs, instead of asking for what is missing.",
    "FM-2.3": "The work drifts away from the objective: agents pursue something irrelevant or unproductive for "
              "the task at hand.",
    "FM-2.4": "An agent has information another agent needs (a result, an error, a constraint) and does not "
              "pass it on, so the other agent decides without it.",
    "FM-2.5": "An agent disregards what another agent told it: a correction, a result or a recommendation is "
              "ignored rather than taken into account or explicitly rejected with a reason.",
    "FM-2.6": "What an agent reasons and what it does disagree: its stated plan or conclusion says one thing and "
              "its action or final answer does another.",
    "FM-3.1": "The run ends before the task is done: the agents stop, or declare an answer, while required steps "
              "are still missing or the information needed was never gathered.",
    "FM-3.2": "The outcome is not checked, or the check leaves out what matters: no agent verifies the result, "
              "or the verification only looks at something superficial (it runs, it has the right form) and not "
              "whether the result is right.",
    "FM-3.3": "A check was made and its verdict is wrong: the verifier accepts a wrong result, misreads a failed "
              "check as passed, or confirms a claim with evidence that does not support it.",
}

EXAMPLES = """\
Worked examples (short, invented; each shows the reading, not a template):
1. S2 tool get_pods, S3 tool get_pods (same args, same result), S4 tool get_pods (same), S5 llm output: \
"Pods listed." -> FM-1.3 at S3,S4: the same read three times with nothing new between. \
Not FM-1.3: S2..S5 poll a rollout whose status changes each time.
2. S4 tool restart kind=write, S5 llm final answer "Fixed." with no check after S4 -> FM-3.2 at S5. \
If S5 is a check whose result says FAILED and S6 answers "verified, all healthy" -> FM-3.3 at S5,S6, not FM-3.2.
3. Task: "answer with a single integer". Final answer: "The result is approximately 42.5 units." -> FM-1.1.
4. S3 llm output: "The error says the file is missing, so I will create it." S4 tool delete_file -> FM-2.6 at S3,S4.
5. Task: "fix the service" (which of three services is not said). S2 agent picks one and edits it without \
asking -> FM-2.2 at S2, when nothing in the run says which service was meant.
6. S6 llm output gives the answer; S7..S12 the agents keep exchanging "TERMINATE?" / "please confirm" until \
the turn limit -> FM-1.5 at S7..S12. A run that gives up at S3 with the required fix never attempted -> FM-3.1 at S3.
"""

# Label sets whose 3.2/3.3 ids mean the other split: their id -> ours.
SPLITS: dict[str, Mapping[str, str]] = {
    "ours": {},
    "swapped": {"FM-3.2": "FM-3.3", "FM-3.3": "FM-3.2"},
}


def to_our_split(labels: Mapping[str, bool | None], split: str) -> dict[str, bool | None]:
    """Labels from a set using ``split`` with their 3.2/3.3 ids moved onto ours."""
    if split not in SPLITS:
        raise ValueError(f"unknown label split {split!r} (known: {', '.join(SPLITS)})")
    mapping = SPLITS[split]
    return {mapping.get(mode, mode): value for mode, value in labels.items()}
