"""``chunkraft audit``: audit a controller snapshot export (see :mod:`chunkraft.audit.job`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from chunkraft.audit import job

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    return job.run(args)


def register(commands: Subcommands) -> None:
    """Adds ``chunkraft audit``."""
    parser = commands.add_parser(
        "audit", help="audit a snapshot export: invariants, drift, load (exit 0/1/2)",
        description="Audit a controller snapshot export with Spark (or pyarrow); exit 0 "
                    "clean, 1 violations, 2 job error.")
    job.add_arguments(parser)
    parser.set_defaults(handler=_run)
