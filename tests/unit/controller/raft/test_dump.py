"""The Raft dump file: image, idempotency table and Raft entries back as written, or an error."""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from pathlib import Path

import pytest

from chunkraft.controller.image import MetadataDelta, MetadataImage, MetadataProvenance
from chunkraft.controller.raft import BatchOutcome, BatchStatus
from chunkraft.controller.raft.dump import read_dump, read_dump_header, write_dump
from chunkraft.errors import CorruptBatchError, SnapshotError
from tests.unit.controller.image.support import broker, chunk, partition, topic

CLUSTER = uuid.UUID("6f1c1a3e-0000-4000-8000-00000000c1d5")
KEYS = [
    (b"\x01" * 16, BatchOutcome(BatchStatus.COMMITTED, 30, 2, b'{"name":"orders"}')),
    (b"\x02" * 16, BatchOutcome(BatchStatus.COMMITTED, 41, 1, b"")),
]
LAST = (b"\x00\x80\x02K\x00.", 12, 3)
PREVIOUS = (b"\x01", 11, 3)


def sample_image() -> MetadataImage:
    delta = MetadataDelta(MetadataImage.EMPTY)
    delta.replay_all([
        broker(0), broker(1), broker(2),
        topic("orders", uuid.UUID(int=1)),
        partition(0, (0, 1), uuid.UUID(int=1)),
        partition(1, (1, 2), uuid.UUID(int=1)),
        chunk(0, 10, 10, (0, 1), topic_id=uuid.UUID(int=1)),
        chunk(10, -1, -1, (0, 1), topic_id=uuid.UUID(int=1)),
        topic("audit", uuid.UUID(int=2)),
        partition(0, (2,), uuid.UUID(int=2)),
    ])
    return delta.apply(MetadataProvenance(41, 3))


def write(path: Path, image: MetadataImage) -> None:
    write_dump(path, image=image, cluster_id=CLUSTER, keys=KEYS, last_entry=LAST,
               previous_entry=PREVIOUS, members=["127.0.0.1:2", "127.0.0.1:1"])


@pytest.fixture(scope="module")
def dump_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("dump") / "dump"
    write(path, sample_image())
    return path.read_bytes()


def snapshot_start(dump_bytes: bytes) -> int:
    """Where the snapshot batches begin: after the prefix and the JSON header."""
    _magic, length, _crc = struct.unpack_from(">8sII", dump_bytes)
    return 16 + length


def test_round_trip(tmp_path: Path) -> None:
    image = sample_image()
    path = tmp_path / "dump"
    write(path, image)
    header, loaded = read_dump(path)
    assert loaded == image
    assert loaded.offset == 41
    assert loaded.epoch == 3
    assert loaded.content_hash() == image.content_hash()
    assert loaded.topics.chunk_count() == 2
    assert header.cluster_id == CLUSTER
    assert (header.offset, header.epoch, header.end_offset) == (41, 3, 42)
    assert header.last_entry == LAST
    assert header.previous_entry == PREVIOUS
    assert header.members == ("127.0.0.1:1", "127.0.0.1:2")
    assert header.keys == tuple(KEYS)
    assert read_dump_header(path) == header
    assert header.snapshot_start == snapshot_start(path.read_bytes())
    assert header.member_ids == {}


def test_member_ids_round_trip_and_older_dumps_have_none(tmp_path: Path) -> None:
    path = tmp_path / "dump"
    write_dump(path, image=sample_image(), cluster_id=CLUSTER, keys=KEYS, last_entry=LAST,
               previous_entry=PREVIOUS, members=["127.0.0.1:2", "127.0.0.1:1"],
               member_ids={"127.0.0.1:2": 2, "127.0.0.1:1": 1})
    assert read_dump_header(path).member_ids == {"127.0.0.1:1": 1, "127.0.0.1:2": 2}


def test_the_file_is_not_a_pickle(dump_bytes: bytes) -> None:
    assert dump_bytes[:8] == b"CRDUMP01"
    _magic, length, _crc = struct.unpack_from(">8sII", dump_bytes)
    header = json.loads(dump_bytes[16 : 16 + length])
    assert header["offset"] == 41
    assert header["cluster_id"] == str(CLUSTER)


def test_an_empty_image_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "dump"
    write_dump(path, image=MetadataImage.EMPTY, cluster_id=CLUSTER, keys=[], last_entry=LAST,
               previous_entry=PREVIOUS, members=[])
    header, loaded = read_dump(path)
    assert loaded.is_empty()
    assert loaded.offset == -1
    assert header.keys == ()


def test_a_flipped_header_byte_is_a_snapshot_error(tmp_path: Path, dump_bytes: bytes) -> None:
    path = tmp_path / "dump"
    for position in range(snapshot_start(dump_bytes)):
        flipped = bytearray(dump_bytes)
        flipped[position] ^= 0x01
        path.write_bytes(flipped)
        with pytest.raises(SnapshotError):
            read_dump(path)


def test_every_flipped_batch_byte_is_refused(tmp_path: Path, dump_bytes: bytes) -> None:
    path = tmp_path / "dump"
    for position in range(snapshot_start(dump_bytes), len(dump_bytes)):
        flipped = bytearray(dump_bytes)
        flipped[position] ^= 1 << (position % 8)
        path.write_bytes(flipped)
        with pytest.raises((CorruptBatchError, SnapshotError)):
            read_dump(path)


def test_a_truncated_dump_is_refused(tmp_path: Path, dump_bytes: bytes) -> None:
    path = tmp_path / "dump"
    # Every length through the header and the first batch's, then every third and the last 40.
    lengths = {*range(snapshot_start(dump_bytes) + 80), *range(0, len(dump_bytes), 3),
               *range(len(dump_bytes) - 40, len(dump_bytes))}
    for length in sorted(lengths):
        path.write_bytes(dump_bytes[:length])
        with pytest.raises((CorruptBatchError, SnapshotError)):
            read_dump(path)


def test_bytes_after_the_end_of_the_snapshot_are_refused(tmp_path: Path, dump_bytes: bytes) -> None:
    path = tmp_path / "dump"
    path.write_bytes(dump_bytes + dump_bytes[snapshot_start(dump_bytes):])
    with pytest.raises((CorruptBatchError, SnapshotError)):
        read_dump(path)


def test_a_header_of_another_format_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "dump"
    header = json.dumps({"format": 2}).encode()
    path.write_bytes(struct.pack(">8sII", b"CRDUMP01", len(header), zlib.crc32(header)) + header)
    with pytest.raises(SnapshotError, match="format 2"):
        read_dump(path)

