"""``chunkraft broker``: run a broker agent.

::

    chunkraft broker --config FILE [--override KEY=VALUE ...]

The configuration comes from flags > ``CHUNKRAFT_BROKER_*`` environment > file > defaults
(``docs/broker.md`` lists the settings); then :func:`chunkraft.broker_agent.process.run_broker`
runs the broker until SIGTERM (a controlled shutdown, exit 0). Exit status 2 for a usage or
configuration error, 1 when the broker cannot start. Errors go to stderr as ``error: ...``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from chunkraft.broker_agent.config import load_broker_config
from chunkraft.cli.errors import InputFileError
from chunkraft.cli.input_files import check_input_file
from chunkraft.errors import ConfigError

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["register"]

CONFIG_ERROR = 2


def _override(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def register(commands: Subcommands) -> None:
    """Adds ``broker``."""
    parser = commands.add_parser(
        "broker", help="run a broker agent (data plane, replicas, chunks)",
        description="Run a broker agent with the configuration from FILE, CHUNKRAFT_BROKER_* "
                    "environment variables and --override flags (flags first). Settings are "
                    "listed in docs/broker.md.")
    parser.add_argument("--config", metavar="FILE", default=None,
                        help="a properties file (key=value lines)")
    parser.add_argument("--override", metavar="KEY=VALUE", type=_override, action="append",
                        default=[], help="set a property (repeatable); wins over the file")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        if args.config is not None:  # bounded and UTF-8 before the loader reads it whole
            check_input_file(args.config, "config file")
        config = load_broker_config(args.config, dict(args.override), os.environ)
    except (ConfigError, InputFileError) as error:
        print(f"error: {error}", file=sys.stderr)
        return CONFIG_ERROR
    from chunkraft.broker_agent.process import run_broker  # uvicorn only when running

    return run_broker(config)
