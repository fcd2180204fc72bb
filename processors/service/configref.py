"""The configuration reference in docs/processor.md, generated from ``ProcessorConfig``.

Names, types and defaults come from the pydantic model; the explanations are each field's
``Field(description=...)``, or, for sections not yet written that way, the comment next to the
field in ``config.py``, so the reference cannot drift from the code (a test compares the docs
with this output).

    python -m mast_otel.processors.service.configref
"""

from __future__ import annotations

import inspect
import io
import re
import tokenize
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, SecretStr

from mast_otel.processors.config import ProcessorConfig

START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"
_FIELD = re.compile(r"^\s+(\w+)\s*:")


def _comments(cls: type) -> dict[str, str]:
    """Field name -> its trailing comment, or the comment lines just above it."""
    source = inspect.getsource(cls)
    out: dict[str, str] = {}
    pending: list[str] = []
    by_line: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            by_line[tok.start[0]] = tok.string.lstrip("# ").strip()
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(by_line.get(number, ""))
            continue
        match = _FIELD.match(line)
        if match and "=" in line:
            text = by_line.get(number) or " ".join(pending)
            out.setdefault(match.group(1), text)
        pending = []
    return out


def _default(value: Any) -> str:
    if isinstance(value, BaseModel):
        return "(section)"
    if isinstance(value, SecretStr):
        return "(set)"
    if value is None:
        return "unset"
    if isinstance(value, list) and len(repr(value)) > 80:
        return f"{len(value)} built-in patterns (docs/frameworks.md)"
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
    comments = _comments(model)
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows += _rows(annotation, f"{prefix}{name}.", f"{env}{name.upper()}__")
            continue
        meaning = field.description or comments.get(name, "")
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
    parts.append(f"Top level: `log_level` (`{ProcessorConfig.model_fields['log_level'].default}`, `MAST_OTEL_LOG_LEVEL`).")
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    print(config_reference(), end="")
