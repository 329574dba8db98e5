"""``chunkraft acls --add | --remove | --list``: kafka-acls.sh over the REST v3 ACL resources.

The flags are Kafka's: ``--allow-principal`` / ``--deny-principal`` (repeatable), with
``--allow-host`` / ``--deny-host`` (default ``*``), ``--operation`` (repeatable, default All),
resources ``--topic`` / ``--group`` / ``--transactional-id`` (repeatable) or ``--cluster``,
``--resource-pattern-type`` (LITERAL by default; PREFIXED; ANY or MATCH in a --list or --remove
filter), ``--principal`` to list one principal's ACLs, the ``--producer`` / ``--consumer``
shortcuts, and ``--force`` to remove without asking. ``--add`` creates one ACL per resource,
principal, host and operation and then prints the resource's ACLs, as Kafka does.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from itertools import product
from typing import TYPE_CHECKING, Any

from chunkraft.cli.output import (
    ToolError,
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

__all__ = ["build_parser", "format_acl", "format_pattern", "operation_name", "register"]

ACTIONS = ("add", "remove", "list")
CLUSTER_NAME = "kafka-cluster"

OPERATIONS_OF: dict[str, tuple[str, ...]] = {
    "TOPIC": ("READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS",
              "ALTER_CONFIGS", "ALL"),
    "GROUP": ("READ", "DESCRIBE", "DELETE", "ALL"),
    "CLUSTER": ("CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
                "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE", "ALL"),
    "TRANSACTIONAL_ID": ("DESCRIBE", "WRITE", "ALL"),
}
"""The operations Kafka's AclCommand accepts on each resource type."""

_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation",
           "permission")
_ALL_OPERATIONS = sorted({op for ops in OPERATIONS_OF.values() for op in ops})


def register(commands: Subcommands) -> None:
    """Adds ``chunkraft acls``."""
    register_tool(commands, "acls", "add, remove and list ACLs (kafka-acls.sh)",
                  build_parser, run)


def build_parser() -> ToolParser:
    parser = ToolParser(prog="chunkraft acls",
                        description="Add, remove and list ACLs, like kafka-acls.sh.")
    add_connection_arguments(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--add", action="store_true", help="add ACLs")
    actions.add_argument("--remove", action="store_true", help="remove ACLs")
    actions.add_argument("--list", action="store_true", help="list ACLs")
    resources = parser.add_argument_group("resources")
    resources.add_argument("--topic", action="append", default=[], metavar="TOPIC",
                           help="a topic (repeatable; '*' is every topic)")
    resources.add_argument("--group", action="append", default=[], metavar="GROUP",
                           help="a consumer group (repeatable)")
    resources.add_argument("--transactional-id", action="append", default=[], metavar="ID",
                           help="a transactional id (repeatable)")
    resources.add_argument("--cluster", action="store_true", help="the cluster")
    resources.add_argument("--resource-pattern-type", default="LITERAL",
                           type=str.upper, metavar="TYPE",
                           choices=("LITERAL", "PREFIXED", "ANY", "MATCH"),
                           help="LITERAL (default) or PREFIXED; --list and --remove also "
                                "take ANY or MATCH")
    who = parser.add_argument_group("principals, hosts and operations")
    who.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL",
                     help="User:NAME to allow (repeatable; User:* is everyone)")
    who.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL",
                     help="User:NAME to deny (repeatable)")
    who.add_argument("--principal", action="append", default=[], metavar="PRINCIPAL",
                     help="--list: only this principal's ACLs (repeatable)")
    who.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                     help="host the allowed principals may connect from (default *)")
    who.add_argument("--deny-host", action="append", default=[], metavar="HOST",
                     help="host the denied principals are denied from (default *)")
    who.add_argument("--operation", action="append", default=[], metavar="OPERATION",
                     help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                          "DescribeConfigs, AlterConfigs, IdempotentWrite or All (repeatable; "
                          "default All)")
    shortcuts = parser.add_argument_group("shortcuts")
    shortcuts.add_argument("--producer", action="store_true",
                           help="WRITE, DESCRIBE and CREATE on the topics")
    shortcuts.add_argument("--consumer", action="store_true",
                           help="READ and DESCRIBE on the topics, READ on the --group")
    shortcuts.add_argument("--idempotent", action="store_true",
                           help="with --producer: IDEMPOTENT_WRITE on the cluster")
    parser.add_argument("--force", action="store_true",
                        help="--remove without asking for confirmation")
    return parser


def operation_name(text: str) -> str:
    """Kafka's spellings of an operation -> its enum name: ``ClusterAction``,
    ``cluster-action`` and ``CLUSTER_ACTION`` all -> ``CLUSTER_ACTION``."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", text.strip())
    name = spaced.replace("-", "_").upper()
    if name not in _ALL_OPERATIONS:
        raise ToolError(f"unknown operation {text!r}; expected one of "
                        + ", ".join(_ALL_OPERATIONS))
    return name


def format_pattern(resource_type: str, name: str, pattern_type: str) -> str:
    """Kafka's ``ResourcePattern`` text."""
    return f"ResourcePattern(resourceType={resource_type}, name={name}, patternType={pattern_type})"


def format_acl(acl: dict[str, Any]) -> str:
    """Kafka's ``AccessControlEntry`` text."""
    return (f"(principal={acl['principal']}, host={acl['host']}, "
            f"operation={acl['operation']}, permissionType={acl['permission']})")


def run(parser: ToolParser, args: argparse.Namespace) -> int:
    action = exactly_one(parser, args, ACTIONS)
    _check_options(parser, args, action)
    with open_client(args) as client:
        if action == "list":
            return _list(client, args)
        if action == "add":
            return _add(client, args)
        return _remove(client, args)


def _check_options(parser: ToolParser, args: argparse.Namespace, action: str) -> None:
    resources = _resources(args)
    if action == "add":
        if not resources:
            usage_error(parser, "--add needs a resource: --topic, --group, "
                                "--transactional-id or --cluster")
        if not (args.allow_principal or args.deny_principal):
            usage_error(parser, "--add needs --allow-principal or --deny-principal")
        if args.resource_pattern_type not in ("LITERAL", "PREFIXED"):
            usage_error(parser, "--add needs --resource-pattern-type LITERAL or PREFIXED")
    if action == "remove" and not resources:
        usage_error(parser, "--remove needs a resource: --topic, --group, "
                            "--transactional-id or --cluster")
    if args.principal and action != "list":
        usage_error(parser, "--principal can only be used with --list (use "
                            "--allow-principal or --deny-principal)")
    if action == "list" and (args.allow_principal or args.deny_principal or args.operation
                             or args.producer or args.consumer):
        usage_error(parser, "--list takes resources and --principal only")
    if (args.producer or args.consumer) and args.operation:
        usage_error(parser, "--producer and --consumer cannot be used with --operation")
    if (args.producer or args.consumer) and not args.topic:
        usage_error(parser, "--producer and --consumer need --topic")
    if args.consumer and not args.group:
        usage_error(parser, "--consumer needs --group")
    if args.idempotent and not args.producer:
        usage_error(parser, "--idempotent can only be used with --producer")
    if args.allow_host and not args.allow_principal:
        usage_error(parser, "--allow-host needs --allow-principal")
    if args.deny_host and not args.deny_principal:
        usage_error(parser, "--deny-host needs --deny-principal")
    for principal in [*args.allow_principal, *args.deny_principal, *args.principal]:
        kind, _, name = principal.partition(":")
        if not kind or not name:
            usage_error(parser, f"principal {principal!r} is not of the form Type:name "
                                "(User:alice)")


def _resources(args: argparse.Namespace) -> list[tuple[str, str]]:
    resources = [("TOPIC", name) for name in args.topic]
    resources += [("GROUP", name) for name in args.group]
    resources += [("TRANSACTIONAL_ID", name) for name in args.transactional_id]
    if args.cluster:
        resources.append(("CLUSTER", CLUSTER_NAME))
    return resources


def _planned(args: argparse.Namespace) -> list[dict[str, str]]:
    """The ACLs ``--add`` creates (or ``--remove`` deletes): every resource x principal x host
    x operation, each checked against the operations its resource type takes."""
    per_resource: list[tuple[str, str, list[str]]] = []
    if args.producer or args.consumer:
        for topic in args.topic:
            operations = []
            if args.producer:
                operations += ["WRITE", "DESCRIBE", "CREATE"]
            if args.consumer:
                operations += [op for op in ("READ", "DESCRIBE") if op not in operations]
            per_resource.append(("TOPIC", topic, operations))
        if args.consumer:
            per_resource += [("GROUP", group, ["READ"]) for group in args.group]
        if args.producer:
            per_resource += [("TRANSACTIONAL_ID", tid, ["WRITE", "DESCRIBE"])
                             for tid in args.transactional_id]
            if args.idempotent:
                per_resource.append(("CLUSTER", CLUSTER_NAME, ["IDEMPOTENT_WRITE"]))
    else:
        operations = [operation_name(op) for op in args.operation] or ["ALL"]
        for resource_type, name in _resources(args):
            refused = [op for op in operations if op not in OPERATIONS_OF[resource_type]]
            if refused:
                # kafka-acls' own rule (the controller stores any operation, as Kafka's
                # does): a tool error without a Kafka error name, worded as AclCommand's
                raise ToolError(
                    f"ResourceType {resource_type} only supports operations "
                    + ",".join(OPERATIONS_OF[resource_type]) + f" (not {','.join(refused)})")
            per_resource.append((resource_type, name, operations))
    entries = [("ALLOW", p, h) for p, h in product(args.allow_principal,
                                                     args.allow_host or ["*"])]
    entries += [("DENY", p, h) for p, h in product(args.deny_principal,
                                                     args.deny_host or ["*"])]
    acls = []
    for resource_type, name, operations in per_resource:
        for (permission, principal, host), operation in product(entries, operations):
            acls.append({"resource_type": resource_type, "resource_name": name,
                         "pattern_type": args.resource_pattern_type, "principal": principal,
                         "host": host, "operation": operation, "permission": permission})
    return _unique(acls)


def _unique(acls: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``acls`` without repeats (by their seven fields), in order."""
    return list({tuple(str(acl.get(field)) for field in _FIELDS): acl
                 for acl in acls}.values())


def _add(client: AdminClient, args: argparse.Namespace) -> int:
    acls = _planned(args)
    created = [client.create_acl(acl) for acl in acls]
    if args.output == "json":
        print_json(created)
        return 0
    for pattern, group in _by_pattern(acls):
        _print_group("Adding ACLs for resource", pattern, group)
    for pattern, _group in _by_pattern(acls):
        resource_type, name, pattern_type = pattern
        current = client.list_acls({"resource_type": resource_type, "resource_name": name,
                                    "pattern_type": pattern_type})
        _print_group("Current ACLs for resource", pattern, current)
    return 0


def _remove(client: AdminClient, args: argparse.Namespace) -> int:
    explicit = bool(args.allow_principal or args.deny_principal)
    filters: list[dict[str, str]] = []
    if explicit:
        filters = _planned(args)
    else:
        for resource_type, name in _resources(args):
            filters.append({"resource_type": resource_type, "resource_name": name,
                            "pattern_type": args.resource_pattern_type})
    if not args.force:
        described = "\n".join(
            "\t" + (format_acl(f) + " from " if explicit else "all ACLs of ")
            + format_pattern(f["resource_type"], f["resource_name"], f["pattern_type"])
            for f in filters)
        print(f"Are you sure you want to remove:\n{described}\n? (y/n)", flush=True)
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            return 0
    removed: list[dict[str, Any]] = []
    for acl_filter in filters:
        removed.extend(client.delete_acls(acl_filter))
    if args.output == "json":
        print_json(removed)
        return 0
    for pattern, group in _by_pattern(removed):
        _print_group("Removed ACLs for resource", pattern, group)
    if not removed:
        print("No ACL matched: nothing was removed.")
    return 0


def _list(client: AdminClient, args: argparse.Namespace) -> int:
    base: dict[str, str] = {}
    if args.resource_pattern_type != "LITERAL" or _resources(args):
        base["pattern_type"] = args.resource_pattern_type
    filters = [{**base, "resource_type": t, "resource_name": n} for t, n in _resources(args)]
    filters = filters or [base]
    if args.principal:
        filters = [{**f, "principal": p} for f, p in product(filters, args.principal)]
    acls: list[dict[str, Any]] = []
    for acl_filter in filters:
        acls.extend(client.list_acls(acl_filter))
    acls = _unique(acls)
    if args.output == "json":
        print_json(acls)
        return 0
    for principal in args.principal:
        print(f"ACLs for principal `{principal}`")
    for pattern, group in _by_pattern(acls):
        _print_group("Current ACLs for resource", pattern, group)
    return 0


def _by_pattern(acls: Iterable[dict[str, Any]]
                ) -> list[tuple[tuple[str, str, str], list[dict[str, Any]]]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for acl in acls:
        key = (str(acl["resource_type"]), str(acl["resource_name"]), str(acl["pattern_type"]))
        groups.setdefault(key, []).append(acl)
    return sorted(groups.items())


def _print_group(title: str, pattern: tuple[str, str, str], acls: list[dict[str, Any]]) -> None:
    print(f"{title} `{format_pattern(*pattern)}`:")
    for acl in sorted(acls, key=lambda a: (a["principal"], a["host"], a["operation"],
                                            a["permission"])):
        print(f" \t{format_acl(acl)}")
    print()
