"""A code agent's action: the code its model wrote for the framework to run.

A code-writing agent (a ``CodeAgent``) sends no tools; each step's model output carries the code to run,
after ``Code:`` in a fenced block (``py``/``python``) or between ``<code>`` and ``</code>``, and
the framework executes it inside the step. That code is the step's action, as a tool call is a
tool-calling agent's: the same code run again is the same action. Pure functions.
"""

from __future__ import annotations

import re

_TAGGED = re.compile(r"<code>\s*(.*?)\s*</code>", re.DOTALL)
_FENCED = re.compile(r"```(?:py|python)[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)


def code_action(output: str | None) -> str | None:
    """The code a model output asks to run, whitespace-normalized per line; ``None`` when it has none."""
    if not output or ("<code>" not in output and "```py" not in output):
        return None
    blocks = _TAGGED.findall(output) or _FENCED.findall(output)
    code = "\n".join(line.rstrip() for block in blocks for line in block.strip().splitlines() if line.strip())
    return code or None
