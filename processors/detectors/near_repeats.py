"""When two tool calls ask for the same thing in different words (FM-1.3's near-identical repeats).

Two requests are the same when their arguments, read as values, differ only in ways that do not
change what is asked: case, whitespace, punctuation, word order and little words ("the", "of") of
a text (a search query),
and the form of an empty value (``''``, ``{}``, ``[]``, ``None``); arguments that are all empty ask for
nothing, whatever the fields are called (``{"": ""}``, ``{"arguments": {}}``, ``{}`` for a tool that takes
no arguments). They are reworded when the same
fields hold the same non-text values and each text shares at least half its words with the other:
such a pair is a repeat only when it also returns nothing new (see the repetition detector). A
text of one token (a URL, a path, an id) is never reworded: another one names another thing.
What a result brought back is read the same way: :func:`addresses_in` lists the web addresses a
search's results name, so a rewording that brings back the same hits is seen to have found nothing
new whatever header echoes its query. Pure functions over the arguments' and results' captured text.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from mast_otel.processors.tools.content_memo import parsed_value
from mast_otel.processors.tools.values import canonical

Request = tuple[tuple[str, object], ...]  # (field path, normalized value), sorted
_WORD = re.compile(r"[^\W_]+")
_EMPTY = "<empty>"
# Words that carry no request of their own: "the total of the invoice" asks what "invoice total" asks.
STOP_WORDS = frozenset("""a an the of in on at to for from by with and or is are was were be what which who whom
whose when where how me my i you your it its this that these those please tell show find give about as do does""".split())
REWORDED_SHARE = 0.5  # words two texts share, of all the words either has, for a rewording
_MAX_FIELDS = 32
NOTHING: Request = (("", _EMPTY),)  # arguments that ask for nothing


def request_of(args: str) -> Request:
    """The arguments as a comparable request: each field's text as its set of lowercase words,
    empty values alike, envelopes (a Python call's ``kwargs``) unwrapped."""
    fields: list[tuple[str, object]] = []
    _flatten(canonical(parsed_value(args)), "", fields, 0)  # parsed once per run while a memo is held
    if all(value == _EMPTY for _, value in fields):
        return NOTHING  # no field holds anything: the same request whatever the fields are named
    return tuple(sorted(fields, key=lambda f: f[0]))


def request_of_texts(texts: list[str]) -> Request:
    """Texts in order (a code action's string literals) as a comparable request, read as arguments' texts are."""
    fields: list[tuple[str, object]] = []
    for i, text in enumerate(texts[:_MAX_FIELDS]):
        _flatten(text, f"[{i}]", fields, 1)
    return tuple(fields)


def _flatten(value: Any, path: str, out: list[tuple[str, object]], depth: int) -> None:
    if len(out) >= _MAX_FIELDS:
        return
    if value is None or value == "" or value == {} or value == [] or value == ():
        out.append((path, _EMPTY))
    elif isinstance(value, dict) and depth < 4:
        for key, item in value.items():
            _flatten(item, f"{path}.{key}", out, depth + 1)
    elif isinstance(value, (list, tuple)) and depth < 4:
        for i, item in enumerate(value):
            _flatten(item, f"{path}[{i}]", out, depth + 1)
    elif isinstance(value, str):
        found = _WORD.findall(value.lower())
        if not found:
            out.append((path, _EMPTY))
        elif len(value.split()) > 1:  # prose (a query, a question): its words, in any order
            words = frozenset(found)
            out.append((path, words - STOP_WORDS or words))
        else:  # one token (a URL, a path, an id): the same only with the same parts in the same order
            out.append((path, tuple(found)))
    else:
        out.append((path, value))


def same_fields(a: Request, b: Request) -> bool:
    """Whether two requests fill the same fields (whatever they hold)."""
    return len(a) == len(b) and all(x[0] == y[0] for x, y in zip(a, b))


_ADDRESS = re.compile(r"https?://[^\s)\]>\"'|,]+")
_MAX_ADDRESSES = 200


def addresses_in(result: str | None) -> frozenset[str]:
    """The web addresses a result lists (a search's hits), trailing punctuation dropped; empty when none."""
    if not result or "://" not in result:
        return frozenset()
    return frozenset(a.rstrip(".;:!?").lower() for a in _ADDRESS.findall(result)[:_MAX_ADDRESSES])


def sameness(a: Request, b: Request) -> Literal["same", "reworded"] | None:
    """``"same"`` when ``b`` asks what ``a`` asks, ``"reworded"`` when it rewords it, else ``None``."""
    if a == b:
        return "same"
    if len(a) != len(b):
        return None
    reworded = False
    for (path_a, value_a), (path_b, value_b) in zip(a, b):
        if path_a != path_b:
            return None
        if value_a == value_b:
            continue
        if not (isinstance(value_a, frozenset) and isinstance(value_b, frozenset)):
            return None
        if len(value_a & value_b) < REWORDED_SHARE * len(value_a | value_b):
            return None
        reworded = True
    return "reworded" if reworded else "same"
