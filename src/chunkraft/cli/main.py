"""The ``chunkraft`` entry point: one argparse parser assembled from the subcommand modules.

To add a subcommand, write a module with ``register(commands)`` and list that function below:
in ``COMMANDS`` for ``chunkraft NAME``, or under a group in ``GROUPS`` for ``chunkraft GROUP NAME``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from chunkraft.cli import (
    acls,
    audit,
    broker,
    chunks,
    cluster,
    configs,
    consume,
    controller,
    credentials,
    demo,
    produce,
    quorum,
    quorum_voters,
    records_dump,
    snapshot,
    topics,
)

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["COMMANDS", "GROUPS", "build_parser", "main"]

Register = Callable[["Subcommands"], None]

COMMANDS: tuple[Register, ...] = (
    cluster.register, controller.register, broker.register, demo.register,
    topics.register, configs.register, chunks.register, acls.register, produce.register,
    consume.register, audit.register,
)
"""Top-level subcommands: ``chunkraft NAME``."""

GROUPS: dict[str, tuple[str, tuple[Register, ...]]] = {
    "records": ("inspect metadata records and the files that hold them", (records_dump.register,)),
    "quorum": ("describe the controller quorum and change its voters",
               (quorum.register, quorum_voters.register)),
    "credentials": ("manage the bearer tokens of a credentials file", (credentials.register,)),
    "snapshot": ("export controller snapshots and broker state as Parquet", (snapshot.register,)),
}
"""Subcommand groups: ``chunkraft GROUP NAME``, as ``{group: (help, registers)}``."""


def _print_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2  # argparse's status for a usage error

    return handler


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, every registered subcommand included."""
    parser = argparse.ArgumentParser(
        prog="chunkraft", description="A KRaft-style metadata controller with partition chunks."
    )
    parser.set_defaults(handler=_print_help(parser))
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for register in COMMANDS:
        register(commands)
    for name, (help_text, registers) in GROUPS.items():
        group = commands.add_parser(name, help=help_text, description=help_text)
        group.set_defaults(handler=_print_help(group))
        group_commands = group.add_subparsers(title="commands", metavar="COMMAND")
        for register in registers:
            register(group_commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``chunkraft`` with ``argv`` (default: the process's); returns the exit status."""
    args = build_parser().parse_args(argv)
    status: int = args.handler(args)
    return status
