"""FM-2.6 reasoning-action mismatch: the model wrote a tool's observation into its own completion.

Frameworks that run a text ReAct loop (the ReAct agents of several frameworks) read
``Action: <tool>`` and ``Action Input: ...`` from the model's completion, run the tool, and hand
its result back as the next ``Observation:``; they stop the model at ``Observation:``. A completion
that goes on past its action to an ``Observation:`` line with text of its own has made up what the
tool would say, and whatever it concludes from there rests on a result no tool gave (the
framework may even take its ``Final Answer`` without running anything). Needs content; the
finding names the tool, never the text.
"""

from __future__ import annotations

import re

from mast_otel.processors.detectors.context import RunContext, finding
from mast_otel.processors.model import Finding

DETECTOR = "invented_observation"
MODE = "FM-2.6"
CONFIDENCE = 0.7
EVIDENCE_CAP = 5
_ACTION = re.compile(r"^\W*Action[ \t]*:[ \t]*([^\n]*\S)", re.MULTILINE)
_OBSERVATION = re.compile(r"^\W*Observation[ \t]*:[ \t]*\S", re.MULTILINE)  # with text of its own


def detect(ctx: RunContext) -> list[Finding]:
    invented = []
    for call in ctx.run.llm_calls:
        text = call.output_text
        if text and "Observation" in text and (action := _ACTION.search(text)) is not None \
                and _OBSERVATION.search(text, action.end()) is not None:  # an action, then an observation after it
            invented.append((call, action.group(1).strip("`'\" ")))
    if not invented:
        return []
    first, tool = invented[0]
    more = f" (and in {len(invented) - 1} more model calls)" if len(invented) > 1 else ""
    return [finding(MODE, CONFIDENCE, f"the model wrote the observation of its action {tool!r} into its own completion "
                    f"instead of waiting for the tool's result{more}", [c.span_id for c, _ in invented[:EVIDENCE_CAP]],
                    DETECTOR, anchor=first.span_id)]
