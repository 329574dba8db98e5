"""The Raft dump file: the state machine written at a Raft index, in chunkraft's own format.

pysyncobj writes this file when it compacts its journal, streams it to a follower that fell
behind the compacted log, and loads it on restart. It is never a pickle::

    "CRDUMP01" | u32 header_length | u32 crc32(header) | header (JSON) | snapshot batches

The header holds the cluster id, the image's offset and epoch, the Raft entries pysyncobj needs
back (the last two applied entries and the members) and the idempotency table; the batches are a
snapshot (the image as records, ``records/files``), the last one flagged END_OF_SNAPSHOT, so the
metadata stream can serve them as they are.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import time
import uuid
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkraft.controller.image import MetadataDelta, MetadataImage, MetadataProvenance
from chunkraft.controller.image.snapshot import gc_paused
from chunkraft.controller.raft.state_machine import BatchOutcome, BatchStatus
from chunkraft.errors import SnapshotError
from chunkraft.records import decode_records
from chunkraft.records.files import read_embedded_snapshot_batches, snapshot_batches

__all__ = ["DumpHeader", "RaftEntry", "entry_from_json", "entry_to_json", "read_dump",
           "read_dump_header", "write_dump"]

MAGIC = b"CRDUMP01"
_PREFIX = struct.Struct(">8sII")
FORMAT_VERSION = 1

RaftEntry = tuple[bytes, int, int]
"""pysyncobj's journal entry: (command, index, term)."""


@dataclass(frozen=True, slots=True)
class DumpHeader:
    """What a dump holds besides the image; ``snapshot_start`` is the byte its batches start at."""

    cluster_id: uuid.UUID
    offset: int
    epoch: int
    last_entry: RaftEntry
    previous_entry: RaftEntry
    members: tuple[str, ...]
    keys: tuple[tuple[bytes, BatchOutcome], ...]
    snapshot_start: int
    member_ids: Mapping[str, int] = field(default_factory=dict)
    """The controller id of each member whose id the writer knew (absent in older dumps)."""

    @property
    def end_offset(self) -> int:
        return self.offset + 1


def entry_to_json(entry: Sequence[Any]) -> list[Any]:
    command, index, term = entry
    return [int(index), int(term), base64.b64encode(bytes(command)).decode("ascii")]


def entry_from_json(value: Any) -> RaftEntry:
    index, term, command = value
    return (base64.b64decode(command), int(index), int(term))


def write_dump(
    path: str | os.PathLike[str],
    *,
    image: MetadataImage,
    cluster_id: uuid.UUID,
    keys: Sequence[tuple[bytes, BatchOutcome]],
    last_entry: Sequence[Any],
    previous_entry: Sequence[Any],
    members: Sequence[str],
    member_ids: Mapping[str, int] | None = None,
) -> None:
    """Writes the dump to ``path`` (pysyncobj renames it into place) and fsyncs it.
    ``member_ids``: the controller id of each member whose id is known, so that a node that
    loads the dump can tell itself, and a member whose address changed, by id."""
    header = {
        "format": FORMAT_VERSION,
        "cluster_id": str(cluster_id),
        "offset": image.offset,
        "epoch": max(image.epoch, 0),
        "raft": {
            "last": entry_to_json(last_entry),
            "previous": entry_to_json(previous_entry),
            "members": sorted(members),
            "member_ids": dict(sorted((member_ids or {}).items())),
        },
        "keys": [
            [key.hex(), outcome.base_offset, outcome.count,
             base64.b64encode(outcome.response).decode("ascii")]
            for key, outcome in keys
        ],
    }
    header_bytes = json.dumps(header, separators=(",", ":")).encode()
    with open(path, "wb") as file:
        file.write(_PREFIX.pack(MAGIC, len(header_bytes), zlib.crc32(header_bytes)))
        file.write(header_bytes)
        for batch in snapshot_batches(
            image.encoded_records(),
            epoch=max(image.epoch, 0),
            cluster_id=cluster_id,
            append_time_ms=int(time.time() * 1000),
            records_per_batch=2000,
            batch_bytes=1024 * 1024,
        ):
            file.write(batch)
        file.flush()
        os.fsync(file.fileno())


def read_dump_header(path: str | os.PathLike[str]) -> DumpHeader:
    """The header of the dump at ``path``; raises SnapshotError if it is not one."""
    label = str(path)
    with open(path, "rb") as file:
        prefix = file.read(_PREFIX.size)
        if len(prefix) != _PREFIX.size:
            raise SnapshotError("the Raft dump is shorter than its header", label, 0)
        magic, length, crc = _PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise SnapshotError("not a chunkraft Raft dump (bad magic)", label, 0)
        header_bytes = file.read(length)
    if len(header_bytes) != length or zlib.crc32(header_bytes) != crc:
        raise SnapshotError("the Raft dump's header fails its CRC", label, _PREFIX.size)
    try:
        header = json.loads(header_bytes)
        if header["format"] != FORMAT_VERSION:
            raise SnapshotError(f"unknown dump format {header['format']}", label, 0)
        keys = tuple(
            (bytes.fromhex(key), BatchOutcome(
                BatchStatus.COMMITTED, int(base), int(count), base64.b64decode(response)))
            for key, base, count, response in header["keys"]
        )
        return DumpHeader(
            cluster_id=uuid.UUID(header["cluster_id"]),
            offset=int(header["offset"]),
            epoch=int(header["epoch"]),
            last_entry=entry_from_json(header["raft"]["last"]),
            previous_entry=entry_from_json(header["raft"]["previous"]),
            members=tuple(header["raft"]["members"]),
            keys=keys,
            snapshot_start=_PREFIX.size + length,
            member_ids={str(address): int(node)
                        for address, node in header["raft"].get("member_ids", {}).items()},
        )
    except (KeyError, TypeError, ValueError) as error:
        raise SnapshotError(f"the Raft dump's header is malformed: {error}", label, 8) from error


def read_dump(path: str | os.PathLike[str]) -> tuple[DumpHeader, MetadataImage]:
    """The header and the image of the dump at ``path``, checked whole (all or nothing)."""
    header = read_dump_header(path)
    delta = MetadataDelta(MetadataImage.EMPTY)
    with gc_paused():
        for batch in read_embedded_snapshot_batches(
            Path(path), start=header.snapshot_start, epoch=header.epoch
        ):
            if batch.cluster_id != header.cluster_id:
                raise SnapshotError(
                    f"snapshot batch of cluster {batch.cluster_id} in a dump of cluster "
                    f"{header.cluster_id}", str(path), batch.position)
            delta.replay_all(decode_records(batch.records))
        image = delta.apply(MetadataProvenance(header.offset, header.epoch))
    return header, image
