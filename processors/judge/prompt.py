"""The judge's instructions: the 14 MAST modes as the taxonomy means them, examples, the format.

The definitions are :data:`definitions.JUDGE_DEFINITIONS` (the MAST paper's meaning in this
project's words), not the taxonomy's rule-oriented one-liners: the judge reads what rules
cannot. ``PROMPT_VERSION`` is part of the cache key, and :func:`version` (prompt and answer
schema) is written on every judge finding, so a verdict can always be traced to the
instructions that produced it.
"""

from __future__ import annotations

import json
from functools import lru_cache

from mast_otel.processors import taxonomy
from mast_otel.processors.judge.definitions import EXAMPLES, JUDGE_DEFINITIONS
from mast_otel.processors.judge.schema import SCHEMA_VERSION, json_schema

PROMPT_VERSION = "3"  # 2: MAST definitions, the 3.2/3.3 split stated, worked examples, multi-line texts; 3: team lines


def version() -> str:
    """What ``mast.judge.prompt_version`` says: the prompt and the answer schema."""
    return f"prompt-{PROMPT_VERSION}.schema-{SCHEMA_VERSION}"


_INSTRUCTIONS = """\
You review one run of an LLM agent system and decide which failure modes of the MAST \
taxonomy it shows. The run is listed as steps with ids S1, S2, ...: model calls ("llm") and \
tool calls ("tool"), with the agent that made them, errors, verification results and, when \
available, the messages, arguments and results (indented under their label, lines as \
written). A team run lists its agents ("team:") and who handed work to whom, in order \
("handoffs:"); a handoff by itself is not a failure. Long texts may be cut where it says "chars truncated", and some middle steps may \
be summarised or left out to keep the run short; do not count a cut or an omission as a \
failure. Secrets were replaced with [REDACTED:...] \
placeholders before you saw the run; treat those as ordinary values.

Assess every one of the 14 modes below exactly once. A mode is detected only when specific \
steps show it; cite those step ids (only ids that appear in the run). Give a confidence \
from 0 to 1 and a rationale of one or two sentences that refers to steps by id and does \
not copy message text.

Failure modes:
{definitions}

FM-3.2 and FM-3.3 are split this way: a check that is missing, or that leaves out whether the \
result is right, is FM-3.2; a check that was made and reached the wrong verdict is FM-3.3.

{examples}"""

_FORMAT = """\
Answer with a single JSON object and nothing else, following this JSON schema:
{schema}
"""


def definitions() -> str:
    lines = []
    for mode in taxonomy.MODES.values():
        category = taxonomy.CATEGORIES[mode.category]
        lines.append(f"- {mode.id} {mode.name} ({category}): {JUDGE_DEFINITIONS[mode.id]}")
    return "\n".join(lines)


@lru_cache(maxsize=4)
def system_prompt(schema_in_prompt: bool) -> str:
    """The system message; the schema is spelled out when the API cannot enforce it."""
    text = _INSTRUCTIONS.format(definitions=definitions(), examples=EXAMPLES)
    if schema_in_prompt:
        text += "\n" + _FORMAT.format(schema=json.dumps(json_schema(), separators=(",", ":")))
    return text


def messages(run_text: str, *, schema_in_prompt: bool) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system_prompt(schema_in_prompt)},
        {"role": "user", "content": "Run to assess:\n\n" + run_text},
    ]


def correction(previous_answer: str, problem: str) -> list[dict[str, str]]:
    """Follow-up turns asking the model to fix an answer that failed validation."""
    return [
        {"role": "assistant", "content": previous_answer[:4000]},
        {
            "role": "user",
            "content": f"That answer cannot be used: {problem}. Answer again with one JSON object that "
            "assesses all 14 modes exactly once and cites only step ids present in the run.",
        },
    ]
