"""``chunkraft produce``: kafka-console-producer.sh over the brokers' data plane.

Reads records from standard input, one per line, and sends them with the real
:class:`~chunkraft.client.producer.Producer` (Kafka's default partitioner, idempotence, retries
with metadata refresh, KIP-253's partition count on every produce). ``--property
parse.key=true`` splits each line at ``key.separator`` (a tab by default) into key and value;
``null.marker`` turns a key or value equal to it into null. ``--acks`` is 0, 1 or all (-1, the
default). With ``--transactional-id`` the whole input is one transaction, committed at the end
of the input (aborted if a record fails). ``--sync`` waits for each record's acknowledgement
before reading the next line. Like Kafka's tool it prints nothing when all goes well; a failed
record ends the command with ``Error while executing produce command : ...`` and status 1, and
so does an input line that is not UTF-8 or is longer than 1 MiB (Kafka's ``max.request.size``
default), named by its number.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterable, Iterator
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
from chunkraft.cli.input_files import read_input_lines
from chunkraft.cli.output import ToolError, ToolParser, register_tool

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["LineReader", "build_parser", "parse_acks", "register", "run"]

READER_KEYS = ("parse.key", "key.separator", "null.marker", "ignore.error")
"""``--property`` keys: how lines become records (Kafka's LineMessageReader's)."""

PRODUCER_PROPERTIES: dict[str, tuple[str, Any]] = {
    "client.id": ("client_id", text_value),
    "enable.idempotence": ("enable_idempotence", boolean),
    "linger.ms": ("linger_ms", integer),
    "batch.size": ("batch_size", integer),
    "delivery.timeout.ms": ("delivery_timeout_ms", integer),
    "retry.backoff.ms": ("retry_backoff_ms", integer),
    "transaction.timeout.ms": ("transaction_timeout_ms", integer),
}
"""``--producer-property`` keys and the Producer keyword argument each sets."""


def register(commands: Subcommands) -> None:
    """Adds ``chunkraft produce``."""
    register_tool(commands, "produce", "send lines of standard input as records "
                  "(kafka-console-producer.sh)", build_parser, run)


def build_parser() -> ToolParser:
    parser = ToolParser(prog="chunkraft produce",
                        description="Send the lines of standard input to a topic, like "
                                    "kafka-console-producer.sh.")
    add_broker_connection_arguments(parser)
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="the topic")
    parser.add_argument("--acks", type=parse_acks, default=-1, metavar="{all,-1,0,1}",
                        help="acknowledgements to wait for: all (= -1, the default), 1, 0")
    parser.add_argument("--transactional-id", metavar="ID",
                        help="send the whole input as one transaction of this id "
                             "(committed at the end of the input)")
    parser.add_argument("--sync", action="store_true",
                        help="wait for each record's acknowledgement before the next line")
    property_flag(parser, "--property",
                  "how lines become records: parse.key=true, key.separator=<tab>, "
                  "null.marker=, ignore.error=false")
    property_flag(parser, "--producer-property",
                  "producer settings: " + ", ".join(PRODUCER_PROPERTIES))
    return parser


def parse_acks(text: str) -> int:
    """An argparse type: ``all`` / ``-1`` -> -1, ``0``, ``1``."""
    value = text.strip().lower()
    if value in ("all", "-1"):
        return -1
    if value in ("0", "1"):
        return int(value)
    raise argparse.ArgumentTypeError(f"must be all, -1, 0 or 1, got {text!r}")


@dataclass(frozen=True)
class LineReader:
    """Turns input lines into ``(key, value)`` byte pairs, as Kafka's LineMessageReader.

    Without ``parse_key`` the whole line is the value and the key is null. With it, a line
    without the separator is refused (ToolError) unless ``ignore_error``, which makes the whole
    line the value. A key or value equal to ``null_marker`` (when set) is null.
    """

    parse_key: bool = False
    key_separator: str = "\t"
    null_marker: str | None = None
    ignore_error: bool = False

    @classmethod
    def from_properties(cls, values: dict[str, str]) -> LineReader:
        separator = unescape(values.get("key.separator", "\\t"))
        if not separator:
            raise ToolError("property key.separator must not be empty")
        return cls(parse_key=boolean(values.get("parse.key", "false"), "parse.key"),
                   key_separator=separator, null_marker=values.get("null.marker"),
                   ignore_error=boolean(values.get("ignore.error", "false"), "ignore.error"))

    def _bytes(self, text: str) -> bytes | None:
        if self.null_marker is not None and text == self.null_marker:
            return None
        return text.encode()

    def parse(self, line: str, number: int) -> tuple[bytes | None, bytes | None]:
        """The record of input line ``number`` (1-based, for the error message)."""
        line = line.rstrip("\r\n")
        if not self.parse_key:
            return None, self._bytes(line)
        key, separator, value = line.partition(self.key_separator)
        if not separator:
            if self.ignore_error:
                return None, self._bytes(line)
            raise ToolError(f"No key separator {self.key_separator!r} found on line "
                            f"number {number}: {line!r}")
        return self._bytes(key), self._bytes(value)

    def records(self, lines: Iterable[str]) -> Iterator[tuple[bytes | None, bytes | None]]:
        for number, line in enumerate(lines, start=1):
            yield self.parse(line, number)


def run(parser: ToolParser, args: argparse.Namespace, stdin: TextIO | None = None,
        factory: Callable[..., Any] | None = None) -> int:
    reader = LineReader.from_properties(
        parse_properties_words(args.property, READER_KEYS, "--property"))
    options = client_options(
        parse_properties_words(args.producer_property, PRODUCER_PROPERTIES,
                               "--producer-property"), PRODUCER_PROPERTIES)
    urls = bootstrap_urls(args.bootstrap)
    credentials = load_credentials(args.command_config)
    if args.transactional_id is not None and args.acks != -1:
        raise ToolError("--transactional-id needs --acks all (transactions are idempotent)")
    # bytes, decoded line by line here: a bad line is named, and no line is unbounded
    lines = read_input_lines(sys.stdin.buffer) if stdin is None else stdin
    return produce_lines(urls, args.topic, reader.records(lines), acks=args.acks,
                         transactional_id=args.transactional_id, sync=args.sync,
                         factory=factory, token=credentials.token,
                         verify=credentials.verify, **options)


def produce_lines(urls: list[str], topic: str,
                  records: Iterable[tuple[bytes | None, bytes | None]], *, acks: int,
                  transactional_id: str | None, sync: bool,
                  factory: Callable[..., Any] | None = None, **options: Any) -> int:
    """Sends ``records`` with a Producer (``factory``, default the real one) built from
    ``options``; 0, or ToolError naming the first record that failed."""
    from chunkraft.cli.client_errors import client_error_types, describe_client_error

    make: Callable[..., Any] = factory if factory is not None else _real_producer()
    errors = client_error_types()
    try:
        producer = make(urls, acks=acks, transactional_id=transactional_id, **options)
    except errors as error:
        raise ToolError(describe_client_error(error)) from None
    try:
        if transactional_id is not None:
            producer.init_transactions()
            producer.begin_transaction()
        pending: list[Any] = []
        for number, (key, value) in enumerate(records, start=1):
            future = producer.send(topic, value, key=key)
            if sync:
                _settle(future, number)
            else:
                pending.append((number, future))
        producer.flush()
        for number, future in pending:
            _settle(future, number)
        if transactional_id is not None:
            producer.commit_transaction()
    except errors as error:
        if transactional_id is not None:
            _abort_quietly(producer)
        raise ToolError(describe_client_error(error)) from None
    except BaseException:
        if transactional_id is not None:
            _abort_quietly(producer)
        raise
    finally:
        producer.close()
    return 0


def _settle(future: Any, number: int) -> None:
    from chunkraft.cli.client_errors import describe_client_error

    try:
        future.result()
    except Exception as error:  # the record's own failure, whatever the Producer reports
        raise ToolError(f"record {number} was not acknowledged: "
                        f"{describe_client_error(error)}") from None


def _abort_quietly(producer: Any) -> None:
    # the abort is best effort: the transaction's timeout aborts it anyway
    with contextlib.suppress(Exception):
        producer.abort_transaction()


def _real_producer() -> Callable[..., Any]:
    from chunkraft.client.producer import Producer

    return Producer
