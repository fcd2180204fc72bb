"""The configuration reference in docs/processor.md, generated from ``ProcessorConfig``.

Names, types, defaults and explanations all come from the pydantic model (each field's
``Field(description=...)``), so the reference cannot drift from the code (a test compares the
docs with this output, and another that every field has a description).

    python -m mast_otel.processors.configref
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, SecretStr

from mast_otel.processors.config import ProcessorConfig

START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"


def _default(value: Any) -> str:
    if isinstance(value, BaseModel):
        return "(section)"
    if isinstance(value, SecretStr):
        return "(set)"
    if value is None:
        return "unset"
    if isinstance(value, list) and len(repr(value)) > 80:
        return f"{len(value)} built-in patterns (`mast-otel config` lists them)"
    return f"`{value}`" if not isinstance(value, (dict, list)) or value else f"`{value!r}`"


def _type(annotation: Any) -> str:
    if get_origin(annotation) is Literal:
        return " or ".join(f"`{v}`" for v in get_args(annotation))
    # (on Python 3.10 a parametrised generic such as dict[str, str] also passes isinstance(type))
    text = annotation.__name__ if isinstance(annotation, type) and get_origin(annotation) is None else str(annotation)
    # Module paths differ between Python versions (pathlib._local.Path on 3.13): keep the names.
    text = re.sub(r"\b(?:[a-z_][a-z0-9_]*\.)+(?=[A-Za-z_])", "", text)
    return text.replace(" | ", " or ")


def _rows(model: type[BaseModel], prefix: str, env: str) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows += _rows(annotation, f"{prefix}{name}.", f"{env}{name.upper()}__")
            continue
        meaning = field.description or ""
        rows.append(f"| `{prefix}{name}` | {_type(annotation)} | {_default(field.get_default(call_default_factory=True))} "
                    f"| `{env}{name.upper()}` | {meaning.replace('|', '&#124;')} |")
    return rows


def config_reference() -> str:
    """A Markdown table per section of the processor's configuration."""
    parts = []
    for name, field in ProcessorConfig.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            doc = (inspect.getdoc(annotation) or "").splitlines()[0] if inspect.getdoc(annotation) else ""
            table = ["| key | type | default | environment | meaning |", "|---|---|---|---|---|"]
            table += _rows(annotation, f"{name}.", f"MAST_OTEL_{name.upper()}__")
            parts.append(f"### `{name}`\n\n{doc}\n\n" + "\n".join(table))
    for name, field in ProcessorConfig.model_fields.items():
        if not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)) and not field.exclude:
            parts.append(f"Top level: `{name}` (`{field.default}`, `MAST_OTEL_{name.upper()}`): {field.description}")
    return "\n\n".join(parts) + "\n"


def write_reference(doc: Path) -> None:
    """Replace the block between the markers in ``doc`` with the current reference."""
    text = doc.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(f"{head}{START}\n{config_reference()}{END}{tail}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        write_reference(Path(sys.argv[2]) if len(sys.argv) > 2 else Path("docs/processor.md"))
    else:
        print(config_reference(), end="")
