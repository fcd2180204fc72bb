"""``mast-otel`` command line: ``serve``, ``config``, ``demo``, ``analyze``, ``eval``, ``tools``.

Each subcommand lives in its own module, which exposes ``add_arguments(parser)`` and
``run(args) -> int``; it is imported only when that subcommand runs, so ``mast-otel --help``
stays fast and ``analyze`` never pays for the server's imports.

Misuse (a bad flag, a missing file, invalid YAML, a port in use) raises
:class:`~mast_otel.processors.usage.UsageError` wherever it is found; :func:`main` is the one
place that turns it into a single line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

from mast_otel.processors.usage import USAGE_EXIT, UsageError

# Never let litellm fetch its model-cost map over the network at import time.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

COMMANDS = {
    "serve": ("mast_otel.processors.serve", "run the processor service (OTLP in, diagnoses out)"),
    "config": ("mast_otel.processors.config_command", "print the effective processor configuration, or --check a file"),
    "demo": ("mast_otel.demo.command", "run a simulated SRE agent fleet against an in-process processor"),
    "analyze": ("mast_otel.processors.offline.analyze", "diagnose exported traces or step-list logs offline"),
    "eval": ("mast_otel.processors.offline.evaluate", "score detection against labelled runs (precision, recall, F1, kappa)"),
    "tools": ("mast_otel.processors.offline.tools", "list the tools agents called, their kinds and why (to review and pin)"),
}


class _Parser(argparse.ArgumentParser):
    """argparse, with a bad flag reported as a :class:`UsageError` (one line) instead of usage text."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see --help)")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported to declare its arguments."""
    from mast_otel import __version__

    parser = _Parser(prog="mast-otel", description="Live MAST failure-mode diagnosis of LLM agent traces.")
    parser.add_argument("--version", action="version", version=f"mast-otel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        cmd.set_defaults(_module=module_name)
        # Arguments are declared by the command's module; import it only for the chosen one.
        if name == command:
            importlib.import_module(module_name).add_arguments(cmd)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv[:1] if a in COMMANDS), None)
    try:
        args = build_parser(command).parse_args(argv)
        return int(importlib.import_module(args._module).run(args) or 0)
    except UsageError as exc:
        print(f"mast-otel{' ' + command if command else ''}: {exc}", file=sys.stderr, flush=True)
        return USAGE_EXIT


if __name__ == "__main__":
    raise SystemExit(main())
