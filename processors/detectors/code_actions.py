"""A code agent's action: the code its model wrote for the framework to run.

A code-writing agent (a ``CodeAgent``) sends no tools; each step's model output carries the code to run,
after ``Code:`` in a fenced block (``py``/``python``) or between ``<code>`` and ``</code>``, and
the framework executes it inside the step. That code is the step's action, as a tool call is a
tool-calling agent's: the same code run again is the same action. Code that differs only in its
comments, or in the wording of its string literals (a message to a helper agent put in other
words), is that action reworded: :func:`shape_of` reads it so. Pure functions.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from typing import NamedTuple

_TAGGED = re.compile(r"<code>\s*(.*?)\s*</code>", re.DOTALL)
_FENCED = re.compile(r"```(?:py|python)[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)


def code_action(output: str | None) -> str | None:
    """The code a model output asks to run, whitespace-normalized per line; ``None`` when it has none."""
    if not output or ("<code>" not in output and "```py" not in output):
        return None
    blocks = _TAGGED.findall(output) or _FENCED.findall(output)
    code = "\n".join(line.rstrip() for block in blocks for line in block.strip().splitlines() if line.strip())
    return code or None


class CodeShape(NamedTuple):
    """A code action read for comparison: its tokens with every string literal as a placeholder and
    comments left out (``skeleton``), and the literals' values in order (``texts``)."""

    skeleton: tuple[str, ...]
    texts: tuple[str, ...]


_MAX_TOKENS = 4000  # a longer action is compared as its text only


def shape_of(code: str) -> CodeShape:
    """The code's shape; code that does not tokenize (cut off, not Python) is its own text.
    Adjacent literals (implicit concatenation) are one text, however the lines were broken."""
    skeleton: list[str] = []
    texts: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type == tokenize.STRING:
                if skeleton and skeleton[-1] == "<str>":  # implicit concatenation: one literal, however split
                    texts[-1] += _literal(token.string)
                else:
                    skeleton.append("<str>")
                    texts.append(_literal(token.string))
            elif token.type not in _IGNORED:
                skeleton.append(token.string)
            if len(skeleton) > _MAX_TOKENS:
                return CodeShape((code,), ())
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return CodeShape((code,), ())
    return CodeShape(tuple(skeleton), tuple(texts))


_IGNORED = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                      tokenize.ENDMARKER})
_PREFIX = re.compile(r"^[rRbBuUfF]{0,2}")


def _literal(source: str) -> str:
    """A string literal's text without its prefix and quotes (escapes left as written)."""
    body = _PREFIX.sub("", source)
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    return body[len(quote):len(body) - len(quote)] if len(body) >= 2 * len(quote) else body


_AT_LINE = re.compile(r"\s*\((detected at )?line \d+\)\s*$")


def parse_failure(code: str) -> str | None:
    """How the interpreter refuses code before running it (its syntax error and the line it points
    at), or ``None`` when the code parses. Code refused this way ran nothing and can only be refused again."""
    try:
        with warnings.catch_warnings():  # an invalid escape in the model's code is its business, not ours
            warnings.simplefilter("ignore")
            ast.parse(code)
    except SyntaxError as error:
        line = (error.text or "").strip().splitlines()[0] if (error.text or "").strip() else ""
        return f"{_AT_LINE.sub('', error.msg or 'invalid syntax')} at {line[:120]!r}"
    except (ValueError, RecursionError, MemoryError):  # null bytes, nesting too deep: not read
        return None
    return None
