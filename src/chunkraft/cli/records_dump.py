"""``chunkraft records dump FILE``: every record of a log segment or snapshot as JSON lines.

Like ``kafka-dump-log --cluster-metadata-decoder``: one line per record, ``{"offset": N, "type":
..., "version": ..., "data": {...}}`` (or the raw bytes in hex with ``--no-decode``). A torn tail,
a corrupt batch or an incomplete snapshot is reported on stderr with its byte position, after the
records before it were printed, and the exit status is 1; so is a record that does not decode,
though the dump goes on past it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from chunkraft.errors import (
    CorruptBatchError,
    LogFileError,
    RecordDecodeError,
    SnapshotError,
    TornTailError,
)
from chunkraft.records.codec import decode_record, record_version_of
from chunkraft.records.files import (
    Batch,
    parse_snapshot_name,
    read_batches,
    read_snapshot_batches,
)
from chunkraft.records.files.snapshot import SNAPSHOT_SUFFIX
from chunkraft.records.json_view import record_to_json

if TYPE_CHECKING:
    from chunkraft.cli import Subcommands

__all__ = ["dump", "register"]

_PROG = "chunkraft records dump"


def register(commands: Subcommands) -> None:
    """Adds ``dump`` to the ``records`` group."""
    parser = commands.add_parser(
        "dump",
        help="print every record of a log segment or snapshot file as JSON lines",
        description=(
            "Print every record of a metadata log segment or snapshot (*.checkpoint) as one JSON "
            "line, with its offset. Exits 1 at a torn tail, a corrupt batch, an incomplete "
            "snapshot or a record that does not decode."
        ),
    )
    parser.add_argument("file", type=Path, metavar="FILE", help="segment or snapshot file")
    parser.add_argument(
        "--no-decode",
        action="store_true",
        help="print each record's size and bytes (hex) instead of decoding it",
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        return dump(args.file, decode=not args.no_decode, out=sys.stdout, err=sys.stderr)
    except BrokenPipeError:
        # The reader (``| head``) went away: stop quietly, and keep Python's exit-time flush of
        # stdout from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _record_line(offset: int, data: bytes, decode: bool) -> str:
    view: dict[str, Any]
    if decode:
        record = decode_record(data)
        _, version = record_version_of(data)
        view = {"offset": offset, **record_to_json(record, version)}
    else:
        view = {"offset": offset, "size": len(data), "hex": data.hex()}
    return json.dumps(view)


def _detail(error: LogFileError) -> str:
    """The error's message without the path and position it carries separately."""
    text = str(error)
    prefix, suffix = f"{error.path}: ", f" (at byte {error.position})"
    if text.startswith(prefix) and text.endswith(suffix):
        return text[len(prefix) : -len(suffix)]
    return text


def _problem_line(error: LogFileError) -> str:
    cause = error.__cause__
    if isinstance(error, TornTailError) or isinstance(cause, TornTailError):
        torn = cause if isinstance(cause, TornTailError) else error
        return f"torn tail at byte {torn.position}: {_detail(torn)}"
    if isinstance(error, CorruptBatchError):
        return f"corrupt batch at byte {error.position}: {_detail(error)}"
    if isinstance(error, SnapshotError):
        return f"bad snapshot at byte {error.position}: {_detail(error)}"
    return f"bad file at byte {error.position}: {_detail(error)}"


def dump(path: Path, *, decode: bool, out: TextIO, err: TextIO) -> int:
    """Writes the records of ``path`` to ``out``, problems to ``err``; returns the exit status."""
    is_snapshot = path.name.endswith(SNAPSHOT_SUFFIX)
    batches: Iterator[Batch]
    try:
        batches = read_snapshot_batches(path) if is_snapshot else read_batches(path)
    except SnapshotError as error:
        print(f"{_PROG}: {path}: {_detail(error)}", file=err)
        return 1
    batch_count = 0
    record_count = 0
    undecodable = 0
    try:
        for batch in batches:
            for index, data in enumerate(batch.records):
                offset = batch.base_offset + index
                try:
                    line = _record_line(offset, data, decode)
                except RecordDecodeError as error:
                    undecodable += 1
                    print(f"{_PROG}: {path}: record at offset {offset}: {error}", file=err)
                    continue
                out.write(line + "\n")
            batch_count += 1
            record_count += batch.count
    except BrokenPipeError:
        raise
    except OSError as error:
        print(f"{_PROG}: {path}: {error.strerror or error}", file=err)
        return 1
    except LogFileError as error:
        print(
            f"{_PROG}: {path}: {_problem_line(error)}; "
            f"{batch_count} batches / {record_count} records read before it",
            file=err,
        )
        return 1
    if is_snapshot:
        end_offset, epoch = parse_snapshot_name(path)
        print(
            f"{_PROG}: {path}: snapshot at end offset {end_offset}, epoch {epoch}: "
            f"{record_count} records in {batch_count} batches",
            file=err,
        )
    if undecodable:
        print(f"{_PROG}: {path}: {undecodable} records did not decode", file=err)
        return 1
    return 0
