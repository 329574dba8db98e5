"""``chunkraft topics``: kafka-topics.sh over the controllers' REST v3 resources.

Actions (exactly one): ``--create --topic T --partitions N --replication-factor R`` or
``--replica-assignment 0:1,1:2`` (kafka-topics' format: partitions separated by commas, the
brokers of one partition by colons); ``--alter --topic T --partitions N`` (KIP-195: the new,
absolute count); ``--describe [--topic T]``; ``--list [--topic T]``; ``--delete --topic T``.
``--if-exists`` / ``--if-not-exists`` as in Kafka; ``--config k=v`` (repeatable) gives a topic
being created its own configurations. ``--topic`` of describe and list is a regular
expression when it is not a plain topic name, as in Kafka.

``--describe`` prints Kafka's layout, a topic line and one line per partition (with the adding
and removing replicas while a move runs), and under each partition its chunks (KIP-1114): the
inactive ones by start offset, then the active one.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from chunkraft.cli.errors import KafkaRefusal
from chunkraft.cli.output import (
    ToolError,
    ToolParser,
    add_connection_arguments,
    brokers_text,
    exactly_one,
    open_client,
    positive,
    print_json,
    register_tool,
    usage_error,
)
from chunkraft.client.admin import AdminClient, AdminError
from chunkraft.records.validation import LEGAL_TOPIC_NAME

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = [
    "ALTER_WARNING",
    "build_parser",
    "chunks_of",
    "format_chunk",
    "format_partition",
    "format_topic",
    "parse_replica_assignment",
    "parse_topic_configs",
    "register",
]

ACTIONS = ("list", "describe", "create", "alter", "delete")

ALTER_WARNING = (
    "WARNING: If partitions are increased for a topic that has a key, keys map to other "
    "partitions from now on; the order of each key's messages is kept (KIP-253: a consumer of "
    "a new partition starts only once the partitions it splits from are consumed up to the "
    "change).")
"""What ``--alter`` prints, where Kafka warns that keyed ordering will be affected."""


def register(commands: Subcommands) -> None:
    """Adds ``chunkraft topics``."""
    register_tool(commands, "topics", "create, alter, describe, list and delete topics "
                  "(kafka-topics.sh)", build_parser, run)


def build_parser() -> ToolParser:
    parser = ToolParser(prog="chunkraft topics", description="Create, alter, describe, list "
                        "and delete topics, like kafka-topics.sh.")
    add_connection_arguments(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--list", action="store_true", help="list the topics' names")
    actions.add_argument("--describe", action="store_true",
                         help="partitions, replicas, ISR and chunks of the topics")
    actions.add_argument("--create", action="store_true", help="create a topic")
    actions.add_argument("--alter", action="store_true",
                         help="raise a topic's partition count (KIP-195)")
    actions.add_argument("--delete", action="store_true", help="delete a topic")
    parser.add_argument("--topic", metavar="TOPIC",
                        help="the topic; for --list and --describe a name or a regular "
                             "expression")
    parser.add_argument("--partitions", type=positive, metavar="N",
                        help="partition count: of the new topic (--create) or the new, "
                             "absolute count (--alter)")
    parser.add_argument("--replication-factor", type=positive, metavar="R",
                        help="replicas per partition of the new topic")
    parser.add_argument("--replica-assignment", metavar="ASSIGNMENT",
                        help="brokers of each partition: 'b1:b2,b3:b4' is partition 0 on "
                             "b1,b2 and partition 1 on b3,b4 (with --alter, the entries of "
                             "the new partitions are used)")
    parser.add_argument("--config", action="append", metavar="KEY=VALUE",
                        help="with --create: a configuration of the new topic "
                             "(retention.ms=86400000); repeat it for several")
    parser.add_argument("--if-exists", action="store_true",
                        help="with --alter, --delete or --describe: do nothing if the topic "
                             "does not exist")
    parser.add_argument("--if-not-exists", action="store_true",
                        help="with --create: do nothing if the topic exists")
    parser.add_argument("--dry-run", action="store_true",
                        help="with --create or --alter: validate only, change nothing")
    parser.add_argument("--under-replicated-partitions", action="store_true",
                        help="with --describe: only partitions whose ISR is smaller than "
                             "their replicas")
    parser.add_argument("--unavailable-partitions", action="store_true",
                        help="with --describe: only partitions without a leader")
    return parser


def parse_replica_assignment(text: str) -> list[list[int]]:
    """kafka-topics' ``--replica-assignment``: ``"0:1,1:2"`` -> ``[[0, 1], [1, 2]]``.

    KafkaRefusal(INVALID_REPLICA_ASSIGNMENT, as a controller would answer) for an empty
    partition, a non-integer or negative broker id, a broker listed twice for one partition,
    or partitions with different replica counts."""
    assignment: list[list[int]] = []
    for index, part in enumerate(text.split(",")):
        brokers: list[int] = []
        for item in part.split(":"):
            item = item.strip()
            if not item.isdigit():
                found = repr(item) if item else "nothing"
                raise _invalid_assignment(f"--replica-assignment {text!r}: partition "
                                          f"{index} has {found} where a broker id should be")
            brokers.append(int(item))
        if len(set(brokers)) != len(brokers):
            raise _invalid_assignment(f"--replica-assignment {text!r}: partition {index} "
                                      f"lists a broker twice: {brokers_text(brokers)}")
        if assignment and len(brokers) != len(assignment[0]):
            raise _invalid_assignment(f"--replica-assignment {text!r}: partition {index} "
                                      f"has {len(brokers)} replicas, partition 0 has "
                                      f"{len(assignment[0])}")
        assignment.append(brokers)
    return assignment


def parse_topic_configs(texts: list[str]) -> dict[str, str]:
    """kafka-topics' ``--config``: each ``key=value`` (the value may hold ``=`` and commas);
    ToolError for one without ``=`` or a key given twice."""
    configs: dict[str, str] = {}
    for text in texts:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise ToolError(f"Invalid topic config {text!r}: all configs must be in the "
                            'format "key=val".')
        if key.strip() in configs:
            raise ToolError(f"Invalid topic config: {key.strip()} is given twice")
        configs[key.strip()] = value.strip()
    return configs


def _invalid_assignment(message: str) -> KafkaRefusal:
    return KafkaRefusal("INVALID_REPLICA_ASSIGNMENT", message)


def _no_such_topic(topic: str) -> KafkaRefusal:
    """Kafka's words for a missing topic, with the error name a controller answers."""
    return KafkaRefusal("UNKNOWN_TOPIC_OR_PARTITION", f"Topic '{topic}' does not exist as "
                        "expected")


def run(parser: ToolParser, args: argparse.Namespace) -> int:
    action = exactly_one(parser, args, ACTIONS)
    _check_options(parser, args, action)
    with open_client(args) as client:
        if action == "list":
            return _list(client, args)
        if action == "describe":
            return _describe(client, args)
        if action == "create":
            return _create(client, args)
        if action == "alter":
            return _alter(client, args)
        return _delete(client, args)


def _check_options(parser: ToolParser, args: argparse.Namespace, action: str) -> None:
    if action in ("create", "alter", "delete") and not args.topic:
        usage_error(parser, f"--{action} needs --topic")
    allowed = {
        "partitions": ("create", "alter"),
        "replication_factor": ("create",),
        "replica_assignment": ("create", "alter"),
        "if_exists": ("alter", "delete", "describe"),
        "if_not_exists": ("create",),
        "config": ("create",),
        "dry_run": ("create", "alter"),
        "under_replicated_partitions": ("describe",),
        "unavailable_partitions": ("describe",),
    }
    for option, actions in allowed.items():
        if getattr(args, option) not in (None, False) and action not in actions:
            flag = "--" + option.replace("_", "-")
            usage_error(parser, f"Option {flag} can only be used with "
                                + " or ".join(f"--{a}" for a in actions))
    if action == "create":
        if args.replica_assignment is not None:
            if args.partitions is not None or args.replication_factor is not None:
                usage_error(parser, "Option --replica-assignment can't be used with "
                                    "--partitions or --replication-factor")
        elif args.partitions is None or args.replication_factor is None:
            usage_error(parser, "--create needs --partitions and --replication-factor, or "
                                "--replica-assignment")
    if action == "alter" and args.partitions is None:
        usage_error(parser, "--alter needs --partitions (the new partition count)")


def _missing(args: argparse.Namespace, error: AdminError) -> int:
    """``--if-exists`` makes a missing topic a success; otherwise Kafka's message."""
    if error.error_name != "UNKNOWN_TOPIC_OR_PARTITION":
        raise error
    if args.if_exists:
        return 0
    raise _no_such_topic(args.topic) from None


# ------------------------------------------------------------------ list and describe


def _selected_names(client: AdminClient, pattern: str | None) -> list[str]:
    return _matching(sorted(str(topic["topic_name"]) for topic in client.list_topics()), pattern)


def _matching(names: list[str], pattern: str | None) -> list[str]:
    """``names`` that ``pattern`` (a regular expression, as kafka-topics' --topic) matches
    whole; all of them without a pattern."""
    if pattern is None:
        return names
    try:
        expression = re.compile(pattern)
    except re.error as error:
        raise ToolError(f"--topic {pattern!r} is not a regular expression: {error}") from None
    return [name for name in names if expression.fullmatch(name)]


def _is_plain_name(topic: str | None) -> bool:
    return topic is not None and LEGAL_TOPIC_NAME.fullmatch(topic) is not None


def _list(client: AdminClient, args: argparse.Namespace) -> int:
    if args.output == "json":
        topics = client.list_topics()
        if args.topic is not None:
            chosen = set(_selected_names(client, args.topic))
            topics = [topic for topic in topics if topic["topic_name"] in chosen]
        print_json(topics)
        return 0
    for name in _selected_names(client, args.topic):
        print(name)
    return 0


def _describe(client: AdminClient, args: argparse.Namespace) -> int:
    topics: list[dict[str, Any]] = []
    if _is_plain_name(args.topic):
        try:
            topics.append(client.get_topic(args.topic))
        except AdminError as error:
            return _missing(args, error)
    else:  # every topic, or those matching a regular expression: one listing has them all
        listed = {str(topic["topic_name"]): topic for topic in client.list_topics()}
        names = _matching(sorted(listed), args.topic)
        if args.topic is not None and not names and not args.if_exists:
            raise _no_such_topic(args.topic)
        topics = [listed[name] for name in names]
    described = []
    for topic in topics:
        try:
            partitions = client.list_partitions(topic["topic_name"], include_chunks=True)
        except AdminError as error:
            if error.error_name != "UNKNOWN_TOPIC_OR_PARTITION":
                raise
            if _is_plain_name(args.topic):
                return _missing(args, error)
            continue  # deleted since the listing: not an error
        partitions = [p for p in partitions if _wanted(p, args)]
        described.append({**topic, "partitions": partitions})
    if args.output == "json":
        print_json(described)
        return 0
    filtering = args.under_replicated_partitions or args.unavailable_partitions
    for topic in described:
        if filtering:  # as Kafka: only the matching partitions, no topic line
            for partition in topic["partitions"]:
                print(format_partition(partition))
            continue
        print(format_topic(topic, _own_configs(client, topic["topic_name"])))
        for partition in topic["partitions"]:
            print(format_partition(partition))
    return 0


def _wanted(partition: dict[str, Any], args: argparse.Namespace) -> bool:
    if args.under_replicated_partitions and \
            len(partition.get("isr_ids") or ()) >= len(partition.get("replica_ids") or ()):
        return False
    return not (args.unavailable_partitions and partition.get("leader_id", -1) >= 0)


def format_topic(topic: dict[str, Any], configs: dict[str, str] | None = None) -> str:
    """Kafka's topic line; ``configs``: the keys set on the topic itself."""
    listed = ",".join(f"{name}={value}" for name, value in (configs or {}).items())
    return (f"Topic: {topic['topic_name']}\tTopicId: {topic.get('topic_id', '')}\t"
            f"PartitionCount: {topic.get('partitions_count', '')}\t"
            f"ReplicationFactor: {topic.get('replication_factor', '')}\tConfigs: {listed}")


def _own_configs(client: AdminClient, topic: str) -> dict[str, str]:
    """The keys set on the topic itself, as kafka-topics shows them; none when the principal
    may not describe its configs (DESCRIBE_CONFIGS) or the topic went since."""
    try:
        entries = client.list_configs("topics", topic)
    except AdminError as error:
        if error.error_name in ("TOPIC_AUTHORIZATION_FAILED", "UNKNOWN_TOPIC_OR_PARTITION"):
            return {}
        raise
    return {str(e["name"]): str(e["value"]) for e in entries
            if e.get("source") == "DYNAMIC_TOPIC_CONFIG"}


def format_partition(partition: dict[str, Any]) -> str:
    """Kafka's partition line, then one line per chunk: the inactive chunks by start offset,
    then the active chunk (whose replicas and ISR are the partition's)."""
    leader = partition.get("leader_id", -1)
    line = (f"\tTopic: {partition['topic_name']}\tPartition: {partition['partition_id']}\t"
            f"Leader: {leader if leader is not None and leader >= 0 else 'none'}\t"
            f"Replicas: {brokers_text(partition.get('replica_ids'))}\t"
            f"Isr: {brokers_text(partition.get('isr_ids'))}"
            + _moving(partition))
    prior = partition.get("prior_partition_epochs") or []
    if prior:
        line += "\tPriorPartitionEpochs: " + ",".join(
            f"{p['partition_id']}@{p['leader_epoch']}" for p in prior)
    lines = [line]
    lines.extend("\t\t" + format_chunk(chunk) for chunk in chunks_of(partition))
    return "\n".join(lines)


def chunks_of(partition: dict[str, Any]) -> list[dict[str, Any]]:
    """A KafkaPartition's chunks as KafkaChunk resources: its ``inactive_chunks`` by start
    offset, then its active chunk (the partition's start offset, leader epoch, replicas)."""
    chunks = sorted(partition.get("inactive_chunks") or [],
                    key=lambda chunk: int(chunk["start_offset"]))
    if "start_offset" in partition:
        chunks.append({
            "topic_name": partition["topic_name"],
            "partition_id": partition["partition_id"],
            "start_offset": partition["start_offset"],
            "stop_offset": -1,
            "end_offset": -1,
            "start_timestamp": partition.get("start_timestamp", -1),
            "chunk_epoch": partition.get("leader_epoch", -1),
            "is_active": True,
            "leader_id": partition.get("leader_id", -1),
            "replica_ids": partition.get("replica_ids") or [],
            "isr_ids": partition.get("isr_ids") or [],
            "adding_replica_ids": partition.get("adding_replica_ids") or [],
            "removing_replica_ids": partition.get("removing_replica_ids") or [],
        })
    return chunks


def format_chunk(chunk: dict[str, Any]) -> str:
    """One chunk's fields: inclusive start / stop / end offsets (DESIGN.md section 3), its
    first record's timestamp, epoch, replicas and ISR, and the adding / removing replicas while
    it moves; an active chunk has no stop or end offset yet."""
    if chunk.get("is_active"):
        offsets = f"Chunk: active\tStartOffset: {chunk['start_offset']}"
    else:
        offsets = (f"Chunk: inactive\tStartOffset: {chunk['start_offset']}\t"
                   f"StopOffset: {chunk.get('stop_offset')}\tEndOffset: {chunk.get('end_offset')}")
    return (f"{offsets}\tStartTimestamp: {chunk.get('start_timestamp')}\t"
            f"Epoch: {chunk.get('chunk_epoch')}\t"
            f"Replicas: {brokers_text(chunk.get('replica_ids'))}\t"
            f"Isr: {brokers_text(chunk.get('isr_ids'))}" + _moving(chunk))


def _moving(item: dict[str, Any]) -> str:
    adding = item.get("adding_replica_ids") or []
    removing = item.get("removing_replica_ids") or []
    if not adding and not removing:
        return ""
    return f"\tAdding Replicas: {brokers_text(adding)}\tRemoving Replicas: {brokers_text(removing)}"


# ------------------------------------------------------------------ writes


def _create(client: AdminClient, args: argparse.Namespace) -> int:
    assignment = (parse_replica_assignment(args.replica_assignment)
                  if args.replica_assignment is not None else None)
    try:
        topic = client.create_topic(args.topic, args.partitions, args.replication_factor,
                                    assignment, validate_only=args.dry_run,
                                    configs=parse_topic_configs(args.config or []))
    except AdminError as error:
        if args.if_not_exists and error.error_name == "TOPIC_ALREADY_EXISTS":
            return 0
        raise
    if args.output == "json":
        print_json(topic)
    elif args.dry_run:
        print(f"Topic {args.topic} would be created (dry run: nothing changed).")
    else:
        print(f"Created topic {args.topic}.")
    return 0


def _alter(client: AdminClient, args: argparse.Namespace) -> int:
    try:
        if args.replica_assignment is not None:
            answer: Any = _alter_with_assignment(client, args)
        else:
            answer = client.alter_topic_partitions(args.topic, args.partitions,
                                                   validate_only=args.dry_run)
    except AdminError as error:
        return _missing(args, error)
    if args.output == "json":
        print_json(answer)
    else:  # after the change, so a refused one prints only its error
        print(ALTER_WARNING)
    return 0


def _alter_with_assignment(client: AdminClient, args: argparse.Namespace) -> dict[str, Any]:
    """Kafka's ``--alter --replica-assignment``: the assignment lists every partition, and the
    entries past the current count place the new ones."""
    assignment = parse_replica_assignment(args.replica_assignment)
    current = int(client.get_topic(args.topic)["partitions_count"])
    new = assignment[current:]
    if len(new) != args.partitions - current:
        raise _invalid_assignment(f"--replica-assignment lists {len(assignment)} partitions; "
                                  f"--partitions {args.partitions} needs {args.partitions} "
                                  f"(the {current} existing ones, then one per new partition)")
    results = client.create_partitions(
        [{"topic_name": args.topic, "partitions_count": args.partitions, "assignments": new}],
        validate_only=args.dry_run)
    for result in results:
        if result.get("error_code"):
            raise AdminError(200, str(result.get("error_name")),
                             str(result.get("error_message") or ""))
    return results[0] if results else {}


def _delete(client: AdminClient, args: argparse.Namespace) -> int:
    try:
        client.delete_topic(args.topic)
    except AdminError as error:
        return _missing(args, error)
    return 0
