"""``chunkraft configs``: kafka-configs.sh over the controllers' REST v3 configs resources.

Entities: ``--entity-type topics --entity-name T``, ``--entity-type brokers --entity-name ID``,
or ``--entity-type brokers --entity-default`` (the cluster-wide default of every broker).
Actions (exactly one): ``--describe [--all]`` (without a name: every topic, or every registered
broker and the default) and ``--alter --add-config k1=v1,k2=[a,b] --delete-config k1,k2``.

Output is kafka-configs': ``Dynamic configs for topic orders are:`` (``All configs ...`` with
``--all``; ``Default configs for brokers in the cluster are:``) then one line per key,
``  name=value sensitive=false synonyms={SOURCE:name=value, ...}``; an alter prints
``Completed updating config for topic orders.``. ``--describe`` without ``--all`` shows only
the keys set on the entity itself, as kafka-configs does.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from chunkraft.cli.errors import ToolError
from chunkraft.cli.output import (
    ToolParser,
    add_connection_arguments,
    exactly_one,
    open_client,
    print_json,
    register_tool,
    usage_error,
)
from chunkraft.client.admin import AdminClient

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["build_parser", "format_entry", "parse_add_config", "parse_delete_config",
           "register"]

ACTIONS = ("describe", "alter")
_OWN_SOURCE = {"topic": "DYNAMIC_TOPIC_CONFIG", "broker": "DYNAMIC_BROKER_CONFIG",
               "default": "DYNAMIC_DEFAULT_BROKER_CONFIG"}
_ADD_FORMAT = ('Invalid entity config: all configs to be added must be in the format '
               '"key=val" or "key=[val1,val2]".')
# Kafka's split: a comma, or an "=", that is not inside square brackets.
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"


def register(commands: Subcommands) -> None:
    """Adds ``chunkraft configs``."""
    register_tool(commands, "configs", "describe and alter topic and broker configurations "
                  "(kafka-configs.sh)", build_parser, run)


def build_parser() -> ToolParser:
    parser = ToolParser(prog="chunkraft configs", description="Describe and alter topic and "
                        "broker configurations, like kafka-configs.sh.")
    add_connection_arguments(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--describe", action="store_true",
                         help="the entity's configurations (only those set on it, unless "
                              "--all)")
    actions.add_argument("--alter", action="store_true",
                         help="change the entity's configurations")
    parser.add_argument("--entity-type", choices=("topics", "brokers"),
                        help="topics or brokers")
    parser.add_argument("--entity-name", metavar="NAME",
                        help="the topic's name or the broker's id")
    parser.add_argument("--entity-default", action="store_true",
                        help="with --entity-type brokers: the cluster-wide default of every "
                             "broker")
    parser.add_argument("--all", action="store_true",
                        help="with --describe: every key, with where its value comes from")
    parser.add_argument("--add-config", action="append", metavar="K=V,...",
                        help="keys to set: 'k1=v1,k2=[v1,v2],k3=v3' (brackets around a list "
                             "value)")
    parser.add_argument("--delete-config", action="append", metavar="K,...",
                        help="keys to delete (their values are inherited again): 'k1,k2'")
    return parser


def parse_add_config(texts: list[str]) -> dict[str, str]:
    """kafka-configs' ``--add-config``: ``"a=1,b=[x,y]"`` -> ``{"a": "1", "b": "x,y"}``
    (ToolError in Kafka's words for an entry that is not ``key=value``)."""
    configs: dict[str, str] = {}
    for text in texts:
        for entry in re.split("," + _OUTSIDE_BRACKETS, text):
            parts = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, entry)
            if len(parts) != 2 or not parts[0].strip():
                raise ToolError(_ADD_FORMAT)
            configs[parts[0].strip()] = re.sub(r"[\[\]]", "", parts[1]).strip()
    return configs


def parse_delete_config(texts: list[str]) -> list[str]:
    """kafka-configs' ``--delete-config``: ``"a,b"`` -> ``["a", "b"]``."""
    keys = [key.strip() for text in texts for key in text.split(",") if key.strip()]
    if not keys:
        raise ToolError("--delete-config needs at least one key")
    return keys


def format_entry(entry: dict[str, Any]) -> str:
    """One key as kafka-configs prints it."""
    synonyms = ", ".join(f"{s['source']}:{s['name']}={s['value']}"
                         for s in entry.get("synonyms") or ())
    value = None if entry.get("is_sensitive") else entry.get("value")
    sensitive = "true" if entry.get("is_sensitive") else "false"
    return f"  {entry['name']}={value} sensitive={sensitive} synonyms={{{synonyms}}}"


def run(parser: ToolParser, args: argparse.Namespace) -> int:
    action = exactly_one(parser, args, ACTIONS)
    _check_options(parser, args, action)
    with open_client(args) as client:
        if action == "describe":
            return _describe(client, args)
        return _alter(client, args)


def _check_options(parser: ToolParser, args: argparse.Namespace, action: str) -> None:
    if args.entity_type is None:
        usage_error(parser, "At least one --entity-type must be specified")
    if args.entity_name is not None and args.entity_default:
        usage_error(parser, "Only one of --entity-name or --entity-default can be specified")
    if args.entity_default and args.entity_type == "topics":
        usage_error(parser, "--entity-default is only for --entity-type brokers: topics take "
                            "their defaults from the brokers' keys")
    if args.entity_type == "brokers" and args.entity_name is not None and not (
            args.entity_name.isascii() and args.entity_name.isdigit()):
        usage_error(parser, "The entity name for brokers must be a valid integer broker id, "
                            f"but it is: {args.entity_name}")
    if action == "alter":
        if args.entity_name is None and not args.entity_default:
            usage_error(parser, f"an entity name must be specified with --alter of "
                                f"{args.entity_type}")
        if not args.add_config and not args.delete_config:
            usage_error(parser, "At least one of --add-config or --delete-config must be "
                                "specified with --alter")
        if args.all:
            usage_error(parser, "Option --all can only be used with --describe")
    elif args.add_config or args.delete_config:
        usage_error(parser, "Options --add-config and --delete-config can only be used with "
                            "--alter")


def _entity(args: argparse.Namespace) -> tuple[str, str | None]:
    """(kind: topic / broker / default, name) of the entity named on the command line."""
    if args.entity_default:
        return "default", None
    return args.entity_type[:-1], args.entity_name


def _describe(client: AdminClient, args: argparse.Namespace) -> int:
    kind, name = _entity(args)
    if name is not None or kind == "default":
        entities = [(kind, name)]
    elif kind == "topic":
        entities = [("topic", t["topic_name"]) for t in client.list_topics()]
    else:
        entities = [("broker", str(b["broker_id"])) for b in client.list_brokers()]
        entities.append(("default", None))
    everything: list[dict[str, Any]] = []
    for entity_kind, entity_name in entities:
        entries = client.list_configs(args.entity_type, entity_name)
        if not args.all:
            entries = [e for e in entries if e.get("source") == _OWN_SOURCE[entity_kind]]
        if args.output == "json":
            everything.extend(entries)
            continue
        if entity_kind == "default":
            print(f"Default configs for {args.entity_type} in the cluster are:")
        else:
            scope = "All" if args.all else "Dynamic"
            print(f"{scope} configs for {entity_kind} {entity_name} are:")
        for entry in entries:
            print(format_entry(entry))
    if args.output == "json":
        print_json(everything)
    return 0


def _alter(client: AdminClient, args: argparse.Namespace) -> int:
    kind, name = _entity(args)
    added = parse_add_config(args.add_config or [])
    deleted = parse_delete_config(args.delete_config) if args.delete_config else []
    both = sorted(set(added) & set(deleted))
    if both:
        raise ToolError(f"Invalid config(s): {','.join(both)} (both added and deleted)")
    changes = [{"name": key, "value": value, "operation": "SET"}
               for key, value in added.items()]
    changes.extend({"name": key, "operation": "DELETE"} for key in deleted)
    client.alter_configs(args.entity_type, name, changes)
    if kind == "default":
        print(f"Completed updating default config for {args.entity_type} in the cluster.")
    else:
        print(f"Completed updating config for {kind} {name}.")
    return 0
