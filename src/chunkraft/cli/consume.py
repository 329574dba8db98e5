"""``chunkraft consume``: kafka-console-consumer.sh over the brokers' data plane.

Prints each record's value on its own line, read with the real
:class:`~chunkraft.client.consumer.Consumer` (chunk-aware: an inactive chunk is read from an
in-sync replica, the active one from its leader; KIP-253's ordering across an expansion).

Where to read: ``--group G`` subscribes to ``--topic`` as a member of group G (offsets
committed after each printed batch); without a group every partition of the topic is assigned.
``--partition P`` reads that partition only, from ``--offset`` (earliest, latest or a number).
``--from-timestamp T`` (epoch milliseconds, or ISO-8601 such as ``2026-11-28T06:00:00Z``; UTC
without a zone) starts each partition read (all of them, or ``--partition``'s) at its first
record at or after T: the Consumer's ``seek_to_timestamp``, which skips the chunks whose
successor started before T (their StartTimestamp) and asks a replica of the others
(ListOffsets).
``--key-range LO-HI`` (repeatable, with ``--partition``) reads only the records whose murmur2
key hash (0 .. 2^31-1) is within [LO, HI] (the key-range fetch proposal); with ``--group``
the committed offsets are per range. ``--from-beginning`` starts where there is no committed
offset at the earliest offset (Kafka's default is the latest). ``--isolation-level
read_committed`` skips aborted transactions and stops at the last stable offset.

When to stop: after ``--max-messages``, when nothing arrived for ``--timeout-ms``, or at
Ctrl-C; then ``Processed a total of N messages`` goes to standard error, as Kafka's tool says.

What to print (``--property``): ``print.timestamp``, ``print.partition``, ``print.offset``,
``print.broker`` (chunkraft's: which broker served the record), ``print.headers``,
``print.key``, ``print.value`` (true by default), each field followed by ``key.separator``
(a tab), a record by ``line.separator`` (a newline); ``null.literal`` stands for null.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from chunkraft.cli.client_args import (
    add_broker_connection_arguments,
    boolean,
    bootstrap_urls,
    client_options,
    integer,
    load_credentials,
    parse_properties_words,
    property_flag,
    text_value,
    unescape,
)
from chunkraft.cli.errors import KafkaRefusal
from chunkraft.cli.output import ToolError, ToolParser, register_tool, usage_error
from chunkraft.protocol.data_plane import KEY_HASH_MAX

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = [
    "RecordFormatter",
    "build_parser",
    "parse_key_range",
    "parse_offset",
    "parse_timestamp",
    "register",
    "run",
]

FORMATTER_KEYS = ("print.timestamp", "print.partition", "print.offset", "print.broker",
                  "print.headers", "print.key", "print.value", "key.separator",
                  "line.separator", "headers.separator", "null.literal")
"""``--property`` keys: how records are printed (Kafka's DefaultMessageFormatter's, plus
``print.broker``)."""

CONSUMER_PROPERTIES: dict[str, tuple[str, Any]] = {
    "client.id": ("client_id", text_value),
    "max.poll.records": ("max_poll_records", integer),
    "enable.auto.commit": ("enable_auto_commit", boolean),
}
"""``--consumer-property`` keys and the Consumer keyword argument each sets."""

POLL_MS = 500
"""The longest single poll: the loop checks ``--timeout-ms`` and ``--max-messages`` between."""


def register(commands: Subcommands) -> None:
    """Adds ``chunkraft consume``."""
    register_tool(commands, "consume", "print the records of a topic "
                  "(kafka-console-consumer.sh)", build_parser, run)


def build_parser() -> ToolParser:
    parser = ToolParser(prog="chunkraft consume",
                        description="Print the records of a topic, like "
                                    "kafka-console-consumer.sh.")
    add_broker_connection_arguments(parser)
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="the topic")
    parser.add_argument("--group", metavar="GROUP",
                        help="consume as a member of this group (committed offsets)")
    parser.add_argument("--from-beginning", action="store_true",
                        help="without a committed offset, start at the earliest offset "
                             "(default: the latest)")
    parser.add_argument("--partition", type=int, metavar="P",
                        help="read this partition only")
    parser.add_argument("--offset", type=parse_offset, metavar="{earliest,latest,N}",
                        help="with --partition: where to start (default: latest, or earliest "
                             "with --from-beginning)")
    parser.add_argument("--from-timestamp", type=parse_timestamp, metavar="T",
                        help="start at the first record at or after T: epoch milliseconds or "
                             "ISO-8601 (2026-11-28T06:00:00Z; UTC without a zone)")
    parser.add_argument("--key-range", type=parse_key_range, action="append", default=[],
                        metavar="LO-HI",
                        help="with --partition: only keys whose murmur2 hash is within "
                             f"[LO, HI] (0 .. {KEY_HASH_MAX}); repeatable")
    parser.add_argument("--isolation-level", choices=("read_uncommitted", "read_committed"),
                        default="read_uncommitted",
                        help="read_committed skips aborted transactions (default "
                             "read_uncommitted)")
    parser.add_argument("--max-messages", type=int, metavar="N",
                        help="stop after N records")
    parser.add_argument("--timeout-ms", type=int, metavar="MS",
                        help="stop when no record arrived for MS milliseconds")
    property_flag(parser, "--property",
                  "output: print.key, print.offset, print.partition, print.timestamp, "
                  "print.broker, print.headers, print.value (true/false), key.separator, "
                  "line.separator, null.literal")
    property_flag(parser, "--consumer-property",
                  "consumer settings: " + ", ".join(CONSUMER_PROPERTIES))
    return parser


def parse_offset(text: str) -> int | str:
    """An argparse type: ``earliest``, ``latest`` or an offset >= 0."""
    value = text.strip().lower()
    if value in ("earliest", "latest"):
        return value
    try:
        offset = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be earliest, latest or an offset, got {text!r}") from None
    if offset < 0:
        raise argparse.ArgumentTypeError(f"an offset is at least 0, got {offset}")
    return offset


def parse_timestamp(text: str) -> int:
    """An argparse type: epoch milliseconds (``1795845600000``) or an ISO-8601 date and time
    (``2026-11-28T06:00:00Z``, ``2026-11-28 07:00:00+01:00``; UTC when no zone is given) ->
    epoch milliseconds."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected epoch milliseconds or an ISO-8601 time such as 2026-11-28T06:00:00Z, "
            f"got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    milliseconds = int(moment.timestamp() * 1000)
    if milliseconds < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is before 1970")
    return milliseconds


def parse_key_range(text: str) -> tuple[int, int]:
    """An argparse type: ``LO-HI`` -> ``(lo, hi)``, both in 0 .. 2^31-1, lo <= hi."""
    lo_text, sep, hi_text = text.strip().partition("-")
    try:
        if not sep:
            raise ValueError
        lo, hi = int(lo_text), int(hi_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO-HI (two integers), got {text!r}"
                                         ) from None
    if not 0 <= lo <= hi <= KEY_HASH_MAX:
        raise argparse.ArgumentTypeError(
            f"{text!r}: need 0 <= LO <= HI <= {KEY_HASH_MAX}")
    return lo, hi


@dataclass(frozen=True)
class RecordFormatter:
    """Kafka's DefaultMessageFormatter: the chosen fields of a record, each followed by
    ``key_separator``, then the value and ``line_separator``."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_broker: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: str = "\t"
    line_separator: str = "\n"
    headers_separator: str = ","
    null_literal: str = "null"

    @classmethod
    def from_properties(cls, values: dict[str, str]) -> RecordFormatter:
        settings: dict[str, Any] = {
            key.replace(".", "_"): boolean(values[key], key)
            for key in FORMATTER_KEYS if key.startswith("print.") and key in values}
        settings.update({key.replace(".", "_"): unescape(values[key])
                         for key in ("key.separator", "line.separator", "headers.separator")
                         if key in values})
        if "null.literal" in values:
            settings["null_literal"] = values["null.literal"]
        return cls(**settings)

    def _text(self, data: bytes | None) -> str:
        if data is None:
            return self.null_literal
        return data.decode("utf-8", errors="replace")

    def format(self, record: Any) -> str:
        """``record``: a ConsumerRecord (topic, partition, offset, timestamp, key, value,
        headers, broker_id)."""
        parts: list[str] = []
        if self.print_timestamp:
            parts.append(f"CreateTime:{record.timestamp}")
        if self.print_partition:
            parts.append(f"Partition:{record.partition}")
        if self.print_offset:
            parts.append(f"Offset:{record.offset}")
        if self.print_broker:
            parts.append(f"Broker:{record.broker_id}")
        if self.print_headers:
            headers = [f"{name}:{self._text(value)}" for name, value in record.headers]
            parts.append(self.headers_separator.join(headers) if headers else "NO_HEADERS")
        if self.print_key:
            parts.append(self._text(record.key))
        fields = "".join(part + self.key_separator for part in parts)
        value = self._text(record.value) if self.print_value else ""
        if not self.print_value and fields:
            fields = fields[:-len(self.key_separator)]
        return fields + value + self.line_separator


@dataclass(frozen=True)
class Plan:
    """Where the consumer reads: subscribe (a group without --partition) or assign."""

    subscribe: bool
    partition: int | None
    offset: int | str | None
    ranges: tuple[tuple[int, int], ...]
    timestamp: int | None = None


def plan_of(parser: ToolParser, args: argparse.Namespace) -> Plan:
    """Checks the combination of options (usage errors, exit 1, as Kafka's tool)."""
    if args.offset is not None and args.partition is None:
        usage_error(parser, "The partition is required when offset is specified.")
    if args.key_range and args.partition is None:
        usage_error(parser, "--key-range needs --partition")
    if args.partition is not None and args.partition < 0:
        usage_error(parser, "--partition must be at least 0")
    if args.offset is not None and args.from_beginning:
        usage_error(parser, "Options --from-beginning and --offset cannot be specified "
                            "together.")
    if args.from_timestamp is not None:
        if args.offset is not None or args.from_beginning:
            usage_error(parser, "--from-timestamp cannot be used with --offset or "
                                "--from-beginning")
        if args.group is not None and args.partition is None:
            usage_error(parser, "--from-timestamp with --group needs --partition (a group "
                                "member's partitions are only known once it has joined)")
    if args.max_messages is not None and args.max_messages < 1:
        usage_error(parser, "--max-messages must be at least 1")
    if args.timeout_ms is not None and args.timeout_ms < 0:
        usage_error(parser, "--timeout-ms must be at least 0")
    ranges = tuple(args.key_range)
    for (lo_a, hi_a), (lo_b, hi_b) in zip(sorted(ranges), sorted(ranges)[1:], strict=False):
        if lo_b <= hi_a:
            usage_error(parser, f"--key-range {lo_a}-{hi_a} and {lo_b}-{hi_b} overlap")
    subscribe = args.group is not None and args.partition is None
    return Plan(subscribe, args.partition, args.offset, ranges, args.from_timestamp)


def run(parser: ToolParser, args: argparse.Namespace, out: TextIO | None = None,
        factory: Callable[..., Any] | None = None) -> int:
    plan = plan_of(parser, args)
    formatter = RecordFormatter.from_properties(
        parse_properties_words(args.property, FORMATTER_KEYS, "--property"))
    options = client_options(
        parse_properties_words(args.consumer_property, CONSUMER_PROPERTIES,
                               "--consumer-property"), CONSUMER_PROPERTIES)
    urls = bootstrap_urls(args.bootstrap)
    credentials = load_credentials(args.command_config)
    return consume(urls, args.topic, plan, formatter, out or sys.stdout,
                   group=args.group, from_beginning=args.from_beginning,
                   isolation_level=args.isolation_level, max_messages=args.max_messages,
                   timeout_ms=args.timeout_ms, factory=factory, token=credentials.token,
                   verify=credentials.verify, **options)


def consume(urls: list[str], topic: str, plan: Plan, formatter: RecordFormatter, out: TextIO,
            *, group: str | None, from_beginning: bool, isolation_level: str,
            max_messages: int | None, timeout_ms: int | None,
            factory: Callable[..., Any] | None = None, **options: Any) -> int:
    """Reads with a Consumer (``factory``, default the real one) and prints until a stop
    condition; returns 0 (ToolError for a client failure)."""
    from chunkraft.cli.client_errors import client_error_types, describe_client_error

    make: Callable[..., Any] = factory if factory is not None else _real_consumer()
    errors = client_error_types()
    count = 0
    try:
        consumer = make(urls, group_id=group, isolation_level=isolation_level,
                            auto_offset_reset="earliest" if from_beginning else "latest",
                            **options)
    except errors as error:
        raise ToolError(describe_client_error(error)) from None
    started = False
    try:
        _start(consumer, topic, plan)
        started = True
        last_record = time.monotonic()
        while max_messages is None or count < max_messages:
            wait = POLL_MS
            if timeout_ms is not None:
                left = timeout_ms / 1000 - (time.monotonic() - last_record)
                if left <= 0:
                    break
                wait = max(1, min(POLL_MS, int(left * 1000)))
            records = consumer.poll(wait)
            if not records:
                continue
            last_record = time.monotonic()
            truncated = max_messages is not None and len(records) > max_messages - count
            if max_messages is not None:
                records = records[:max_messages - count]
            out.write("".join(formatter.format(record) for record in records))
            out.flush()
            count += len(records)
            if group is not None:
                _commit_printed(consumer, records, plan, truncated)
    except errors as error:
        raise ToolError(describe_client_error(error)) from None
    except KeyboardInterrupt:
        pass
    finally:
        if started:  # Kafka's last word, once reading began
            print(f"Processed a total of {count} messages", file=sys.stderr)
        with contextlib.suppress(*errors):  # leaving the group is best effort at exit
            consumer.close()
    return 0


def _start(consumer: Any, topic: str, plan: Plan) -> None:
    if plan.subscribe:
        consumer.subscribe([topic])
        return
    if plan.partition is None:
        partitions = consumer.partitions_for(topic)
        if not partitions:
            raise KafkaRefusal("UNKNOWN_TOPIC_OR_PARTITION",
                               f"Topic '{topic}' does not exist or has no partitions")
        consumer.assign([(topic, p) for p in sorted(partitions)])
        if plan.timestamp is not None:
            for partition in sorted(partitions):
                consumer.seek_to_timestamp((topic, partition), plan.timestamp)
        return
    tp = (topic, plan.partition)
    if plan.ranges:
        consumer.assign({tp: list(plan.ranges)})
    else:
        consumer.assign([tp])
    if plan.offset == "earliest":
        consumer.seek_to_beginning([tp])
    elif plan.offset == "latest":
        consumer.seek_to_end([tp])  # over a group's committed offset too, as Kafka's tool
    elif isinstance(plan.offset, int):
        consumer.seek(tp, plan.offset)
    elif plan.timestamp is not None:
        consumer.seek_to_timestamp(tp, plan.timestamp)


def _commit_printed(consumer: Any, records: Sequence[Any], plan: Plan,
                    truncated: bool) -> None:
    """Commits what was printed: the consumer's positions (key ranges: per range). When
    ``--max-messages`` cut the poll short, the offset after the last printed record of each
    partition instead (a key-range consumer then commits nothing: its positions are per
    range, and the records it did not print would be skipped)."""
    if not truncated:
        consumer.commit()
        return
    if plan.ranges:
        return
    offsets: dict[tuple[str, int], int] = {}
    for record in records:
        tp = (record.topic, record.partition)
        offsets[tp] = max(offsets.get(tp, 0), record.offset + 1)
    if offsets:
        consumer.commit(offsets)


def _real_consumer() -> Callable[..., Any]:
    from chunkraft.client.consumer import Consumer

    return Consumer
