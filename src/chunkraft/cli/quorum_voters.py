"""``chunkraft quorum add-controller / remove-controller``: KIP-853's voter changes.

``add-controller`` names the new controller either by its properties file
(``--controller-config``: its ``node.id``, its own entry of ``controller.quorum.voters`` and its
``advertised.listeners``) or by ``--controller-id``, ``--raft-address`` and ``--http-url``.
``remove-controller --controller-id N`` removes voter N. Both ask any controller (a follower
forwards to the leader) with ``--command-config``'s credentials (ALTER on the cluster), retry
through leader changes with one idempotency key, and print the voters after the change; a
refusal prints ``Error while executing quorum command : ...`` and exits 1. The order that keeps a
majority: replace a dead controller by removing it first, a live one by adding first
(``docs/operations.md``).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from chunkraft.cli.input_files import check_input_file, load_command_config
from chunkraft.cli.output import ToolError, fail, print_json
from chunkraft.client.admin import AdminClient, AdminError
from chunkraft.client.command_config import CommandConfigError
from chunkraft.errors import ConfigError

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["controller_from_config", "format_voters", "register"]

VOTERS_PATH = "/controller/v1/quorum/voters"
CHANGE_TIMEOUT = 60.0
"""How long the command keeps retrying a change through leader changes."""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", "--bootstrap-controller", dest="bootstrap",
                        required=True,
                        help="controller URLs, comma-separated (http://127.0.0.1:9090,...)")
    parser.add_argument("--command-config", metavar="FILE",
                        help="properties file with credentials (bearer.token=...); default: "
                             "the CHUNKRAFT_TOKEN environment variable")
    parser.add_argument("--output", choices=("table", "json"), default="table",
                        help="table, or json (the leader's answer)")


def register(commands: Subcommands) -> None:
    """Adds ``add-controller`` and ``remove-controller`` to the ``quorum`` group."""
    add = commands.add_parser(
        "add-controller", help="add a controller to the quorum as a voter (KIP-853)",
        description="Add a controller, formatted with `chunkraft controller format "
                    "--no-initial-controllers` and running, to the quorum's voters.")
    _common(add)
    add.add_argument("--controller-config", metavar="FILE",
                     help="the new controller's properties file: its node.id, its entry of "
                          "controller.quorum.voters and its advertised.listeners")
    add.add_argument("--controller-id", type=int, metavar="N", help="the new controller's id")
    add.add_argument("--raft-address", metavar="HOST:PORT", help="its Raft listener")
    add.add_argument("--http-url", metavar="URL", help="its HTTP listener (http[s]://host:port)")
    add.set_defaults(handler=_add)
    remove = commands.add_parser(
        "remove-controller", help="remove a controller from the quorum's voters (KIP-853)",
        description="Remove voter N from the quorum (the leader too: it hands leadership over "
                    "first).")
    _common(remove)
    remove.add_argument("--controller-id", type=int, metavar="N", required=True,
                        help="the voter to remove")
    remove.set_defaults(handler=_remove)


def controller_from_config(path: str) -> dict[str, Any]:
    """``controller_id``, ``raft_address``, ``http_url`` from a controller's properties file
    (loaded as the controller itself loads it); ConfigError, ToolError."""
    from chunkraft.controller.config import load_controller_config

    check_input_file(path, "controller config file")
    config = load_controller_config(path, {}, os.environ)
    return {"controller_id": config.node_id, "raft_address": config.voter.address,
            "http_url": config.advertised_listeners.url}


def _add_body(args: argparse.Namespace) -> dict[str, Any]:
    explicit = {"controller_id": args.controller_id, "raft_address": args.raft_address,
                "http_url": args.http_url}
    if args.controller_config is not None:
        body = controller_from_config(args.controller_config)
        body.update({key: value for key, value in explicit.items() if value is not None})
        return body
    missing = [f"--{key.replace('_', '-')}" for key, value in explicit.items() if value is None]
    if missing:
        raise ToolError(f"give --controller-config, or {', '.join(missing)}")
    return explicit


def format_voters(answer: dict[str, Any]) -> str:
    """One line per voter: ``id address connected, caught up``."""
    lines = []
    for voter in answer.get("voters") or []:
        node = "?" if voter.get("node_id") is None else str(voter["node_id"])
        state = ("caught up" if voter.get("caught_up") else "catching up") \
            if voter.get("connected") else "not connected"
        lines.append(f"  {node:>4}  {voter.get('address')}  ({state})")
    return "\n".join(lines)


def _client(args: argparse.Namespace) -> AdminClient:
    config = load_command_config(args.command_config)
    return AdminClient(args.bootstrap, config, retry_for=CHANGE_TIMEOUT, max_attempts=60)


def _add(args: argparse.Namespace) -> int:
    try:
        body = _add_body(args)
        with _client(args) as client:
            answer = client.write("POST", VOTERS_PATH, body)
    except AdminError as error:
        return fail("quorum", error.describe())
    except (CommandConfigError, ToolError, ConfigError, ValueError) as error:
        return fail("quorum", str(error))
    return _report(args, answer, f"Added controller {body['controller_id']} "
                                 f"(Raft {body['raft_address']}, {body['http_url']})")


def _remove(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            answer = client.write("DELETE", f"{VOTERS_PATH}/{args.controller_id}")
    except AdminError as error:
        return fail("quorum", error.describe())
    except (CommandConfigError, ToolError, ValueError) as error:
        return fail("quorum", str(error))
    return _report(args, answer, f"Removed controller {args.controller_id}")


def _report(args: argparse.Namespace, answer: Any, headline: str) -> int:
    if args.output == "json":
        print_json(answer)
    else:
        print(f"{headline}. Voters now:")
        print(format_voters(answer if isinstance(answer, dict) else {}))
    return 0
