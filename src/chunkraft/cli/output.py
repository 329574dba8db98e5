"""How the admin tools (``topics``, ``chunks``, ``acls``, ``quorum``) read arguments and speak.

Like Kafka's tools: a usage mistake prints the problem and the usage line on stderr and exits 1;
a failed command prints ``Error while executing <word> command : <message>`` on stderr and
exits 1; a user's mistake (an unreachable controller, a bad token, a missing file, a malformed
JSON file) never shows a traceback. ``--output json`` prints the REST answer's data as JSON.

Each tool parses its own arguments with a :class:`ToolParser` (argparse, but exiting 1 as Kafka's
tools do rather than argparse's 2); :func:`register_tool` puts it under ``chunkraft`` so that
``chunkraft --help`` lists it and ``chunkraft NAME ...`` hands it every word after its name.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from chunkraft.cli.errors import ToolError
from chunkraft.cli.input_files import load_command_config
from chunkraft.client.admin import AdminClient, AdminError
from chunkraft.client.command_config import CommandConfigError

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = [
    "ToolError",
    "ToolParser",
    "add_connection_arguments",
    "brokers_text",
    "exactly_one",
    "fail",
    "open_client",
    "positive",
    "print_json",
    "register_tool",
    "run_tool",
    "usage_error",
]


class ToolParser(argparse.ArgumentParser):
    """argparse with Kafka's exit status for usage mistakes: 1, after the message and usage."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n"
                     f"Run '{self.prog} --help' for every option.\n")


def add_connection_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """``--bootstrap-server``, ``--command-config`` and ``--output``, shared by every tool."""
    parser.add_argument("--bootstrap-server", "--bootstrap-controller", dest="bootstrap",
                        metavar="URL[,URL...]", required=required,
                        help="controller REST URLs, comma-separated "
                             "(http://127.0.0.1:9090,...); any of them will do")
    parser.add_argument("--command-config", metavar="FILE",
                        help="properties file with credentials: bearer.token=... or "
                             "bearer.token.file=..., ssl.ca.file=, ssl.certificate.file=, "
                             "ssl.key.file= (default: the CHUNKRAFT_TOKEN environment variable)")
    parser.add_argument("--output", choices=("table", "json"), default="table",
                        help="table (Kafka's text layout, the default) or json (the REST "
                             "answer's data)")


def open_client(args: argparse.Namespace, **options: Any) -> AdminClient:
    """An AdminClient for the tool's ``--bootstrap-server`` and ``--command-config``."""
    config = load_command_config(args.command_config)
    try:
        return AdminClient(args.bootstrap, config, **options)
    except ValueError as error:
        if isinstance(error, CommandConfigError):
            raise
        raise ToolError(str(error)) from None


Run = Callable[[ToolParser, argparse.Namespace], int]
"""A tool's body: its parser (for usage errors) and parsed arguments in, exit status out."""


def register_tool(commands: Subcommands, name: str, help_text: str,
                  build_parser: Callable[[], ToolParser], run: Run) -> None:
    """Adds ``chunkraft NAME`` that parses the words after NAME with ``build_parser()`` and
    runs ``run`` under :func:`run_tool`.

    The placeholder parser added to ``commands`` takes every word as is: its prefix character
    is one no command-line word can start with (NUL), so argparse never reads ``--create`` as
    an option of its own, and the tool's parser alone decides what is valid.
    """
    placeholder = commands.add_parser(name, help=help_text, description=help_text,
                                      prefix_chars="\0", add_help=False)
    placeholder.add_argument("words", nargs=argparse.REMAINDER)

    def handler(args: argparse.Namespace) -> int:
        parser = build_parser()
        return run_tool(name, run, parser, parser.parse_args(args.words))

    placeholder.set_defaults(handler=handler)


def run_tool(word: str, run: Run, parser: ToolParser, args: argparse.Namespace) -> int:
    """Runs ``run(parser, args)``; a user's mistake becomes ``Error while executing <word> command``
    and exit status 1, never a traceback. ``word`` is ``topics`` -> ``topic`` and so on."""
    noun = word[:-1] if word.endswith("s") else word
    try:
        return run(parser, args)
    except (AdminError, CommandConfigError, ToolError) as error:
        message = error.describe() if isinstance(error, AdminError) else str(error)
        return fail(noun, message)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    except BrokenPipeError:  # `chunkraft topics --list | head`: the reader left, not an error
        sys.stderr.close()
        return 0


def fail(noun: str, message: str) -> int:
    """Prints Kafka's error line for ``noun`` (topic, chunk, acl, quorum); returns 1."""
    print(f"Error while executing {noun} command : {message}", file=sys.stderr)
    return 1


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2))


def brokers_text(ids: Iterable[int] | None) -> str:
    """``[1, 2, 3]`` -> ``1,2,3``, as Kafka's tools print replica lists."""
    return ",".join(str(broker) for broker in ids or ())


def positive(text: str) -> int:
    """An argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def usage_error(parser: ToolParser, message: str) -> NoReturn:
    """A combination of options that makes no sense: the message, the usage, exit 1."""
    parser.error(message)


def exactly_one(parser: ToolParser, args: argparse.Namespace, actions: Sequence[str]) -> str:
    """The one action flag set among ``actions`` (dest names); a usage error unless exactly
    one is, worded like kafka-topics.sh's."""
    chosen = [action for action in actions if getattr(args, action)]
    if len(chosen) != 1:
        names = [f"--{action.replace('_', '-')}" for action in actions]
        listed = ", ".join(names[:-1]) + f" or {names[-1]}"
        usage_error(parser, f"Command must include exactly one action: {listed}")
    return chosen[0]
