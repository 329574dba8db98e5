"""``chunkraft controller``: run a controller node, or prepare its data dir.

::

    chunkraft controller [--config FILE] [--node-id N] [--override KEY=VALUE ...]
    chunkraft controller format --cluster-id ID --data-dir DIR --node-id N [--ignore-formatted]
    chunkraft controller random-cluster-id

The first form loads the configuration (flags > ``CHUNKRAFT_*`` environment > file > defaults),
checks the data dir and hands over to :func:`chunkraft.controller.process.run_controller`.
Exit status: 2 for a usage or configuration error, 1 for a storage error (unformatted data dir,
another cluster's, ...), else what the controller returns. Errors go to stderr as ``error: ...``.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from chunkraft.cli.errors import InputFileError
from chunkraft.cli.input_files import check_input_file
from chunkraft.controller.addresses import parse_node_id
from chunkraft.controller.config import load_controller_config
from chunkraft.controller.settings import parse_cluster_id
from chunkraft.controller.storage import (
    StorageLayout,
    check_storage,
    format_storage,
    random_cluster_id,
)
from chunkraft.errors import ConfigError, StorageError
from chunkraft.records.uuids import kafka_uuid_str

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["register"]

CONFIG_ERROR = 2  # argparse's status for a usage error: a bad configuration is one too
STORAGE_ERROR = 1

_USAGE = """
  chunkraft controller [--config FILE] [--node-id N] [--override KEY=VALUE ...]
  chunkraft controller format --cluster-id ID --data-dir DIR --node-id N [--ignore-formatted]
  chunkraft controller random-cluster-id"""


def _override(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _cluster_id(text: str) -> uuid.UUID:
    try:
        return parse_cluster_id(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _node_id(text: str) -> int:
    try:
        return parse_node_id(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def register(commands: Subcommands) -> None:
    """Adds ``controller`` (run) with its ``format`` and ``random-cluster-id`` subcommands."""
    parser = commands.add_parser(
        "controller",
        help="run a controller node, or format its data dir",
        description=(
            "Run a controller node with the configuration from FILE, CHUNKRAFT_* environment "
            "variables and flags (flags first), or prepare a data dir with a subcommand. "
            "Settings are listed in docs/operations.md."
        ),
        usage=_USAGE,
    )
    parser.add_argument("--config", metavar="FILE", help="a .properties file of settings")
    # A string, so the loader validates it and names "command line" as its source.
    parser.add_argument("--node-id", dest="run_node_id", metavar="N", help="sets node.id")
    parser.add_argument(
        "--override",
        dest="overrides",
        metavar="KEY=VALUE",
        type=_override,
        action="append",
        default=[],
        help="sets property KEY (repeatable); wins over the file and the environment",
    )
    parser.set_defaults(handler=_run)
    subcommands = parser.add_subparsers(
        title="commands",
        metavar="COMMAND",
        dest="controller_command",
        required=False,
        prog="chunkraft controller",  # else the subcommands' usage repeats the custom one
    )

    format_parser = subcommands.add_parser(
        "format",
        help="format a data dir for a cluster and node (like kafka-storage format)",
        description=(
            "Create DIR if needed and write its meta.properties (cluster id, node id). Refuses "
            "a dir already formatted or not empty. Exit status 1 if it cannot format."
        ),
    )
    format_parser.add_argument("--cluster-id", required=True, type=_cluster_id, metavar="ID")
    format_parser.add_argument("--data-dir", required=True, type=Path, metavar="DIR")
    format_parser.add_argument("--node-id", required=True, type=_node_id, metavar="N")
    format_parser.add_argument(
        "--ignore-formatted",
        action="store_true",
        help="succeed without a change if DIR is already formatted for this cluster and node",
    )
    format_parser.add_argument(
        "--no-initial-controllers", "--join", dest="joining", action="store_true",
        help="for a controller that joins a running quorum (added with `chunkraft quorum "
             "add-controller`): it starts no election before it hears from the leader",
    )
    format_parser.set_defaults(handler=_format)

    random_parser = subcommands.add_parser(
        "random-cluster-id",
        help="print a new cluster id",
        description="Print a new random cluster id in Kafka's base64 form.",
    )
    random_parser.set_defaults(handler=_random_cluster_id)


def _error(message: object) -> None:
    print(f"error: {message}", file=sys.stderr)


def _refuse_run_flags(args: argparse.Namespace) -> bool:
    """Whether run-only flags came with a subcommand (then an error was printed)."""
    given = [
        flag
        for flag, value in (
            ("--config", args.config),
            ("--node-id", args.run_node_id),
            ("--override", args.overrides),
        )
        if value
    ]
    if given:
        _error(
            f"{', '.join(given)}: only for running a controller, not with "
            f"`{args.controller_command}`"
        )
    return bool(given)


def _overrides(args: argparse.Namespace) -> dict[str, str] | None:
    pairs: list[tuple[str, str]] = list(args.overrides)
    if args.run_node_id is not None:
        pairs.append(("node.id", args.run_node_id))
    overrides: dict[str, str] = {}
    for key, value in pairs:
        if key in overrides:
            _error(f"{key} is given twice on the command line")
            return None
        overrides[key] = value
    return overrides


def _run(args: argparse.Namespace) -> int:
    overrides = _overrides(args)
    if overrides is None:
        return CONFIG_ERROR
    try:
        if args.config is not None:  # bounded and UTF-8 before the loader reads it whole
            check_input_file(args.config, "config file")
        config = load_controller_config(args.config, overrides, os.environ)
    except (ConfigError, InputFileError) as error:
        _error(error)
        return CONFIG_ERROR
    try:
        check_storage(config.data_dir, config.cluster_id, config.node_id)
    except StorageError as error:
        _error(error)
        return STORAGE_ERROR
    try:
        # Imported here: the process module (Raft node, HTTP server) is heavy, and the other
        # subcommands must work without it.
        from chunkraft.controller.process import (  # type: ignore[import-not-found,unused-ignore]
            run_controller,
        )
    except ImportError as error:
        _error(f"the controller process cannot be loaded (chunkraft.controller.process): {error}")
        return 1
    try:
        status: int = run_controller(config)
    except ConfigError as error:
        _error(error)
        return CONFIG_ERROR
    except StorageError as error:
        _error(error)
        return STORAGE_ERROR
    return status


def _format(args: argparse.Namespace) -> int:
    if _refuse_run_flags(args):
        return CONFIG_ERROR
    data_dir: Path = args.data_dir
    already = StorageLayout(data_dir).meta_properties.exists()
    try:
        path = format_storage(
            data_dir, args.cluster_id, args.node_id, ignore_formatted=args.ignore_formatted,
            joining=args.joining and not already,
        )
    except StorageError as error:
        _error(error)
        return STORAGE_ERROR
    what = f"cluster {kafka_uuid_str(args.cluster_id)}, node {args.node_id}"
    if already:
        print(f"{data_dir} is already formatted for {what}: nothing to do")
    else:
        print(f"Formatted {data_dir} for {what} ({path})"
              + ("; it joins a running quorum once added as a voter" if args.joining else ""))
    return 0


def _random_cluster_id(args: argparse.Namespace) -> int:
    if _refuse_run_flags(args):
        return CONFIG_ERROR
    print(random_cluster_id())
    return 0
