"""``MAST_OTEL_*`` environment variables that name no setting.

pydantic-settings reads only the variables that match a field and ignores the rest, so a
misspelled one (``MAST_OTEL_STORE_URL`` for ``MAST_OTEL_STORE__URL``) leaves its setting at
the default without a word: a replica then quietly keeps its own SQLite file. The commands
that load the configuration refuse such a variable instead, naming the closest setting.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Mapping, Union

from pydantic import BaseModel

PREFIX = "MAST_OTEL_"
DELIMITER = "__"
# MAST_OTEL_* variables that are not settings but are read by mast-otel itself: the YAML file's
# path, the image the compose stack runs, where the web view's browser test saves screenshots.
NOT_SETTINGS = frozenset({"MAST_OTEL_CONFIG", "MAST_OTEL_IMAGE", "MAST_OTEL_SCREENSHOT_DIR"})
# accepted input that no field declares (mapped by a validator onto the typed fields)
DEPRECATED = {"DETECTION__THRESHOLDS": "detection.thresholds"}


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models a field's type allows (``Section``, ``Section | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return []


def _is_mapping(annotation: object) -> bool:
    """A ``dict`` field (or one that may be): its keys are the user's, any name below it is accepted."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        return any(_is_mapping(arg) for arg in typing.get_args(annotation))
    return annotation is dict or origin is dict or annotation is typing.Any


def setting_names(model: type[BaseModel]) -> tuple[dict[str, str], set[str]]:
    """Every variable name (without the prefix) that sets something in ``model`` -> its dotted
    key, and the names under which any deeper name is accepted (mapping fields)."""
    names: dict[str, str] = {}
    open_below: set[str] = set()

    def walk(current: type[BaseModel], env: str, dotted: str) -> None:
        for name, field in current.model_fields.items():
            key, path = f"{env}{name.upper()}", f"{dotted}{name}"
            names[key] = path
            for section in _models_in(field.annotation):
                walk(section, key + DELIMITER, path + ".")
            if _is_mapping(field.annotation):
                open_below.add(key)

    walk(model, "", "")
    names.update(DEPRECATED)
    return names, open_below


def unknown_variables(environ: Mapping[str, str], model: type[BaseModel]) -> list[str]:
    """One description per ``MAST_OTEL_*`` variable in ``environ`` that sets nothing, with the
    closest setting when one is close."""
    names, open_below = setting_names(model)
    problems = []
    for variable in sorted(environ):
        upper = variable.upper()
        if not upper.startswith(PREFIX) or upper in NOT_SETTINGS:
            continue
        rest = upper[len(PREFIX):]
        if rest in names or any(rest.startswith(key + DELIMITER) for key in open_below):
            continue
        close = difflib.get_close_matches(rest, list(names), n=1, cutoff=0.6)
        hint = (f"did you mean {PREFIX}{close[0]} ({names[close[0]]})?" if close
                else f"settings are {PREFIX}<SECTION>{DELIMITER}<FIELD>, listed by `mast-otel config`")
        problems.append(f"environment variable {variable} is not a setting: {hint}")
    return problems
