"""The ``chunkraft`` entry point: one argparse parser assembled from the subcommand modules.

To add a subcommand, write a module with ``register(commands)`` and name it below: in
``COMMANDS`` for ``chunkraft NAME``, or under a group in ``GROUPS`` for ``chunkraft GROUP NAME``.

Modules are imported by name, and only those the command line needs: ``chunkraft broker`` and
``chunkraft controller`` start without importing the admin tools, the audit job or the local
cluster runner (a broker that restarts is unfenced sooner by what it does not import). Help,
and any first word that names no command, builds the whole parser.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["COMMANDS", "GROUPS", "build_parser", "main"]

Register = Callable[["Subcommands"], None]

COMMANDS: dict[str, str] = {
    "cluster": "cluster", "controller": "controller", "broker": "broker", "demo": "demo",
    "topics": "topics", "configs": "configs", "chunks": "chunks", "acls": "acls",
    "produce": "produce", "consume": "consume", "audit": "audit",
}
"""Top-level subcommands, ``chunkraft NAME``, as ``{NAME: module in chunkraft.cli}``."""

GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "records": ("inspect metadata records and the files that hold them", ("records_dump",)),
    "quorum": ("describe the controller quorum and change its voters",
               ("quorum", "quorum_voters")),
    "credentials": ("manage the bearer tokens of a credentials file", ("credentials",)),
    "snapshot": ("export controller snapshots and broker state as Parquet", ("snapshot",)),
}
"""Subcommand groups, ``chunkraft GROUP NAME``, as ``{GROUP: (help, modules in chunkraft.cli)}``."""


def _register(module: str) -> Register:
    register: Register = importlib.import_module(f"chunkraft.cli.{module}").register
    return register


def _print_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2  # argparse's status for a usage error

    return handler


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, every registered subcommand included; with ``only`` (a command
    or group name), that one alone, so that only its module is imported."""
    parser = argparse.ArgumentParser(
        prog="chunkraft", description="A KRaft-style metadata controller with partition chunks."
    )
    parser.set_defaults(handler=_print_help(parser))
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name, module in COMMANDS.items():
        if only is None or only == name:
            _register(module)(commands)
    for name, (help_text, modules) in GROUPS.items():
        if only is not None and only != name:
            continue
        group = commands.add_parser(name, help=help_text, description=help_text)
        group.set_defaults(handler=_print_help(group))
        group_commands = group.add_subparsers(title="commands", metavar="COMMAND")
        for module in modules:
            _register(module)(group_commands)
    return parser


def _command_word(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names when it starts with one (the parser takes no global options
    but help, so a command is always the first word); None otherwise."""
    if argv and (argv[0] in COMMANDS or argv[0] in GROUPS):
        return argv[0]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``chunkraft`` with ``argv`` (default: the process's); returns the exit status."""
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command_word(words)).parse_args(words)
    status: int = args.handler(args)
    return status
