"""A Python-literal text (a dict or list some callbacks print) read as JSON where the two mean the same.

``ast.literal_eval`` is the slowest reading of a tool value (a compile, then a walk of the tree).
Most printed dicts are JSON but for their spelling: quoted by ``'``, with ``True``, ``False`` and
``None``. A text made only of such strings with no backslash (so no escape, whose rules differ),
``"``-quoted strings with none either, those three words and JSON's own structure, number and
blank characters is read by respelling its strings and words as JSON's and reading that: JSON's
numbers are Python's with the same values, and nothing else in it is spelled differently. Anything
else (escapes, tuples, sets, other names, a number JSON does not write, nesting past what is
counted, a lone surrogate, which ``ast`` refuses) goes to ``ast``, as does every text the respelled
one does not read as JSON: :func:`literal_value` returns ``ast.literal_eval``'s value or raises.
Strings ``ast`` joins (``'i' 'd'`` is ``'id'``) are never read here: JSON has no such thing.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from mast_otel.processors.tools.json_text import loads as json_loads

# Strings with no backslash and no surrogate, the three words, and runs of JSON's structure, number
# and blank characters; possessive, so a text that is not one fails without backtracking.
_SPELLED_LIKE_JSON = re.compile(
    r"""(?:'[^'\\\ud800-\udfff]*+'|"[^"\\\ud800-\udfff]*+"|True|False|None|[-+0-9.eE \t\n\r,:\[\]{}]++)*+""")
_RESPELLED = re.compile(r"""'([^']*)'|"[^"]*"|True|False|None""")
_WORDS = {"True": "true", "False": "false", "None": "null"}
# ``ast`` refuses nesting past 200 brackets (its tokenizer's limit) and JSON readers allow more:
# texts with more brackets than this, counted anywhere, go to ``ast``.
_MAX_BRACKETS = 100


def _respell(match: re.Match[str]) -> str:
    inner = match.group(1)
    if inner is not None:
        return '"' + inner.replace('"', '\\"') + '"'
    text = match.group()
    return _WORDS.get(text, text)  # a ``"``-quoted string is kept as it is


NOT_RESPELLED = object()  # what :func:`respelled_value` returns for a text left to ``ast``


def respelled_value(text: str) -> Any:
    """``ast.literal_eval(text)``'s value where the text read as JSON gives it, else ``NOT_RESPELLED``."""
    if _SPELLED_LIKE_JSON.fullmatch(text) is not None and text.count("[") + text.count("{") <= _MAX_BRACKETS:
        try:
            return json_loads(_RESPELLED.sub(_respell, text))
        except (ValueError, RecursionError):
            pass
    return NOT_RESPELLED


def literal_value(text: str) -> Any:
    """``ast.literal_eval(text)``: its value, or its error."""
    value = respelled_value(text)
    return ast.literal_eval(text) if value is NOT_RESPELLED else value
