"""``chunkraft chunks create|alter|describe``: KIP-1114's kafka-chunks.sh over REST v3.

``create --create-chunk-json-file F`` cuts the active chunk of each partition the file lists;
``alter --alter-chunk-json-file F`` moves inactive chunks to new replicas, and with ``--wait``
draws a progress bar on stderr until every move has completed (bounded by ``--timeout-ms``);
``describe [--topic T [--partition P]]`` lists chunks. ``--dry-run`` validates and changes
nothing. The files are exactly the KIP's examples (see :mod:`chunkraft.cli.chunk_files`).

Each item's outcome is one line: a done item on standard output; a failed item, with its Kafka
error name and message, on standard error, and once every item is reported the command says
how many failed (on standard error too, after the reasons) and exits 1, as Kafka's tools do.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from chunkraft.cli.chunk_files import read_alter_chunk_file, read_create_chunk_file
from chunkraft.cli.errors import KafkaRefusal
from chunkraft.cli.output import (
    ToolError,
    ToolParser,
    add_connection_arguments,
    brokers_text,
    open_client,
    print_json,
    register_tool,
    usage_error,
)
from chunkraft.cli.topics import chunks_of, format_chunk
from chunkraft.client.admin import AdminClient, AdminError

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["ProgressBar", "build_parser", "format_result", "register", "wait_for_moves"]

DEFAULT_TIMEOUT_MS = 300_000
POLL_SECONDS = 0.5


def register(commands: Subcommands) -> None:
    """Adds ``chunkraft chunks``."""
    register_tool(commands, "chunks", "create, move and describe partition chunks "
                  "(KIP-1114's kafka-chunks.sh)", build_parser, run)


def build_parser() -> ToolParser:
    parser = ToolParser(prog="chunkraft chunks",
                        description="Cut, move and describe partition chunks (KIP-1114), "
                                    "like kafka-chunks.sh.")
    parser.add_argument("action", choices=("create", "alter", "describe"),
                        help="create: cut active chunks; alter: move inactive chunks; "
                             "describe: list chunks")
    add_connection_arguments(parser)
    parser.add_argument("--create-chunk-json-file", metavar="FILE",
                        help='create: {"partitions": [{"topic": "t", "partition": 0, '
                             '"replicas": [1, 2, 3]}, ...]}')
    parser.add_argument("--alter-chunk-json-file", metavar="FILE",
                        help='alter: {"chunks": [{"topic": "t", "partition": 0, '
                             '"startOffset": 289818, "replicas": [4, 5, 6]}, ...]}')
    parser.add_argument("--dry-run", action="store_true",
                        help="create / alter: validate only, change nothing")
    parser.add_argument("--wait", action="store_true",
                        help="alter: wait until every move has completed, with a progress "
                             "bar on stderr")
    parser.add_argument("--timeout-ms", type=int, default=DEFAULT_TIMEOUT_MS, metavar="MS",
                        help=f"alter --wait: give up after this long (default "
                             f"{DEFAULT_TIMEOUT_MS})")
    parser.add_argument("--topic", metavar="TOPIC", help="describe: only this topic")
    parser.add_argument("--partition", type=int, metavar="P",
                        help="describe: only this partition of --topic")
    return parser


def run(parser: ToolParser, args: argparse.Namespace) -> int:
    _check_options(parser, args)
    if args.action == "create":
        return _create(args)
    if args.action == "alter":
        return _alter(args)
    return _describe(args)


def _check_options(parser: ToolParser, args: argparse.Namespace) -> None:
    action = args.action
    if action == "create" and args.create_chunk_json_file is None:
        usage_error(parser, "create needs --create-chunk-json-file")
    if action == "alter" and args.alter_chunk_json_file is None:
        usage_error(parser, "alter needs --alter-chunk-json-file")
    for option, allowed in (("create_chunk_json_file", "create"),
                            ("alter_chunk_json_file", "alter"),
                            ("wait", "alter"), ("topic", "describe"),
                            ("partition", "describe")):
        if getattr(args, option) not in (None, False) and action != allowed:
            usage_error(parser, f"--{option.replace('_', '-')} can only be used with {allowed}")
    if args.dry_run and action == "describe":
        usage_error(parser, "--dry-run can only be used with create or alter")
    if args.wait and args.dry_run:
        usage_error(parser, "--wait cannot be used with --dry-run (a dry run moves nothing)")
    if args.partition is not None and args.topic is None:
        usage_error(parser, "--partition needs --topic")
    if args.timeout_ms < 0:
        usage_error(parser, f"--timeout-ms must not be negative, got {args.timeout_ms}")


# ------------------------------------------------------------------ create and alter


def _create(args: argparse.Namespace) -> int:
    items = read_create_chunk_file(args.create_chunk_json_file)
    with open_client(args) as client:
        results = client.create_chunks(items, validate_only=args.dry_run)
    _report(args, "create", items, results)
    return _status("create", results)


def _alter(args: argparse.Namespace) -> int:
    items = read_alter_chunk_file(args.alter_chunk_json_file)
    with open_client(args) as client:
        results = client.alter_chunk_assignments(items, validate_only=args.dry_run)
        _report(args, "alter", items, results)
        if args.wait:  # the moves that started, even if others were refused
            moved = [item for item, result in zip(items, results, strict=True)
                     if not result.get("error_code")]
            if moved:
                wait_for_moves(client, moved, timeout=args.timeout_ms / 1000)
    return _status("alter", results)


def _report(args: argparse.Namespace, action: str, items: list[dict[str, Any]],
            results: list[dict[str, Any]]) -> None:
    """One line per item, a failed one on standard error (or the results as JSON)."""
    if len(results) != len(items):
        raise ToolError(f"the controller answered {len(results)} results for "
                        f"{len(items)} items")
    if args.output == "json":
        print_json(results)
    else:
        for item, result in zip(items, results, strict=True):
            stream = sys.stderr if result.get("error_code") else sys.stdout
            print(format_result(action, item, result, dry_run=args.dry_run), file=stream,
                  flush=True)


def _status(action: str, results: list[dict[str, Any]]) -> int:
    """0, or ToolError saying how many items failed (their lines, on standard error before
    it, said why)."""
    failed = sum(1 for result in results if result.get("error_code"))
    if failed:
        noun = "chunk creations" if action == "create" else "chunk reassignments"
        raise ToolError(f"{failed} of {len(results)} {noun} failed")
    return 0


def format_result(action: str, item: dict[str, Any], result: dict[str, Any], *,
                  dry_run: bool = False) -> str:
    """One line per item: what was done, or the Kafka error name and message."""
    where = f"{item['topic']}-{item['partition']}"
    replicas = brokers_text(item["replicas"])
    if action == "create":
        subject = f"partition {where}"
        done = (f"A new active chunk of partition {where} on brokers {replicas} is valid "
                "(dry run: nothing changed)." if dry_run else
                f"Created a new active chunk of partition {where} on brokers {replicas}.")
    else:
        subject = f"chunk {where} at offset {item['start_offset']}"
        done = (f"Moving chunk {where} at offset {item['start_offset']} to brokers {replicas} "
                "is valid (dry run: nothing changed)." if dry_run else
                f"Moving chunk {where} at offset {item['start_offset']} to brokers "
                f"{replicas}.")
    if not result.get("error_code"):
        return done
    name = result.get("error_name") or f"error {result['error_code']}"
    message = result.get("error_message") or ""
    return f"Error for {subject}: {name}" + (f": {message}" if message else "")


# ------------------------------------------------------------------ --wait


class ProgressBar:
    """A one-line progress bar on ``stream``: redrawn in place on a terminal; elsewhere (a
    file, a pipe) one line each time the count changes, so logs stay readable."""

    WIDTH = 30

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = self.stream.isatty()
        self._last: int | None = None

    def render(self, done: int) -> str:
        filled = self.WIDTH * done // self.total if self.total else self.WIDTH
        return (f"Moving chunks [{'#' * filled}{'.' * (self.WIDTH - filled)}] "
                f"{done}/{self.total} complete")

    def update(self, done: int) -> None:
        if self.interactive:
            self.stream.write("\r" + self.render(done))
            self.stream.flush()
        elif done != self._last:
            self.stream.write(self.render(done) + "\n")
            self.stream.flush()
        self._last = done

    def finish(self) -> None:
        if self.interactive:
            self.stream.write("\n")
            self.stream.flush()


def wait_for_moves(client: AdminClient, moves: list[dict[str, Any]], *, timeout: float,
                   stream: TextIO | None = None, poll: float = POLL_SECONDS) -> None:
    """Polls each moved chunk until none has adding or removing replicas (a chunk that is gone,
    removed by retention, counts as done); ToolError naming the unfinished ones after
    ``timeout`` seconds."""
    bar = ProgressBar(len(moves), stream)
    pending = {(m["topic"], m["partition"], m["start_offset"]) for m in moves}
    deadline = time.monotonic() + timeout
    try:
        while True:
            for key in sorted(pending):
                if _move_done(client, *key):
                    pending.discard(key)
            bar.update(len(moves) - len(pending))
            if not pending:
                return
            if time.monotonic() + poll > deadline:
                break
            time.sleep(poll)
    finally:
        bar.finish()
    unfinished = ", ".join(f"{topic}-{partition} at offset {offset}"
                           for topic, partition, offset in sorted(pending))
    raise ToolError(f"timed out after {timeout * 1000:.0f} ms waiting for "
                    f"{len(pending)} of {len(moves)} chunk moves: {unfinished}")


def _move_done(client: AdminClient, topic: str, partition: int, start_offset: int) -> bool:
    try:
        chunk = client.get_chunk(topic, partition, start_offset)
    except AdminError as error:
        if error.error_name in ("UNKNOWN_CHUNK", "UNKNOWN_TOPIC_OR_PARTITION"):
            return True
        raise
    return not chunk.get("adding_replica_ids") and not chunk.get("removing_replica_ids")


# ------------------------------------------------------------------ describe


def _describe(args: argparse.Namespace) -> int:
    with open_client(args) as client:
        if args.topic is None:
            names = sorted(str(topic["topic_name"]) for topic in client.list_topics())
        else:
            names = [args.topic]
        chunks: list[dict[str, Any]] = []
        for name in names:
            try:
                if args.partition is not None:
                    chunks.extend(client.list_chunks(name, args.partition))
                else:
                    for partition in client.list_partitions(name, include_chunks=True):
                        chunks.extend(chunks_of(partition))
            except AdminError as error:
                if error.error_name != "UNKNOWN_TOPIC_OR_PARTITION":
                    raise
                if args.topic is not None:
                    where = (f"Partition {args.topic}-{args.partition}"
                             if args.partition is not None else f"Topic '{args.topic}'")
                    raise KafkaRefusal("UNKNOWN_TOPIC_OR_PARTITION",
                                       f"{where} does not exist as expected") from None
    if args.output == "json":
        print_json(chunks)
        return 0
    for chunk in chunks:
        print(f"Topic: {chunk['topic_name']}\tPartition: {chunk['partition_id']}\t"
              + format_chunk(chunk))
    return 0
