"""``mast-otel config``: print the effective configuration (YAML, environment and defaults
merged; secrets masked), or ``--check FILE`` to validate a file and name the bad field."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

MASK = "********"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="YAML configuration file (also MAST_OTEL_CONFIG)")
    parser.add_argument("--check", metavar="FILE", help="validate FILE and exit: 0 valid, 2 invalid (the bad fields are named)")


def _masked(value: Any) -> Any:
    """The configuration as plain data, every secret replaced by a mask."""
    from pydantic import SecretStr

    if isinstance(value, SecretStr):
        return MASK
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(v) for v in value]
    if hasattr(value, "__fspath__"):
        return str(value)
    return value


def run(args: argparse.Namespace) -> int:
    import yaml

    from mast_otel.processors.usage import load_config

    path = args.check or args.config
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = load_config(path)  # an invalid file raises UsageError naming every bad field
    for warning in caught:
        if issubclass(warning.category, (FutureWarning, DeprecationWarning)):
            print(f"mast-otel config: note: {warning.message}", file=sys.stderr)
    if args.check:
        print(f"mast-otel config: {args.check} is valid")
        return 0
    data = _masked(config.model_dump())
    print(yaml.safe_dump(data, sort_keys=False, default_flow_style=False), end="")
    return 0
