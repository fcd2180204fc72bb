"""Misuse of a command (a missing file, bad YAML, a port in use, a model without its key).

Code that meets a problem the user can fix raises :class:`UsageError` with a one-line
message; the command line (``mast-otel``) prints ``mast-otel <command>: <message>`` on stderr
and exits 2. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

USAGE_EXIT = 2


class UsageError(Exception):
    """A problem the user can fix, described in one line."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


def one_line(text: str) -> str:
    """``text`` with its lines joined by "; " (tracebacks and multi-line errors do not reach users)."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def describe_invalid(exc: Exception) -> str:
    """A configuration error as one line, each bad field named by its dotted path."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg'].removeprefix('Value error, ')}"
                         for e in exc.errors())
    return str(exc)


def load_config(path: str | Path | None = None, **overrides: Any):
    """The processor configuration (file, environment, defaults), or a :class:`UsageError` naming what is wrong
    (a ``MAST_OTEL_*`` variable that sets nothing included: a misspelled one would leave its setting at the default)."""
    import os

    from mast_otel.processors.config import ProcessorConfig
    from mast_otel.processors.config_env import unknown_variables

    unknown = unknown_variables(os.environ, ProcessorConfig)
    if unknown:
        raise UsageError("; ".join(unknown))
    try:
        return ProcessorConfig.load(path, **overrides)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError; so are unreadable files
        raise UsageError(f"{path or 'the configuration'} is invalid: {describe_invalid(exc)}") from None


def validate_config(data: dict[str, Any]):
    """``data`` (a configuration dump with flags applied) as a configuration, or a :class:`UsageError`."""
    from mast_otel.processors.config import ProcessorConfig

    try:
        return ProcessorConfig.model_validate(data)
    except ValueError as exc:
        raise UsageError(f"invalid configuration: {describe_invalid(exc)}") from None


def write_text(path: str | Path, text: str) -> None:
    """Write an output file the user named; a missing folder or no permission is their problem to fix."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def number_at_least(minimum: float, kind: type = int):
    """An argparse ``type`` accepting a ``kind`` (int or float) of at least ``minimum``; anything else is a bad flag."""
    import argparse

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'a whole number' if kind is int else 'a number'}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text} is less than {minimum}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def port_number(text: str) -> int:
    """An argparse ``type`` for a TCP port (0: any free one)."""
    import argparse

    port = number_at_least(0)(text)
    if port > 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0 to 65535)")
    return port
