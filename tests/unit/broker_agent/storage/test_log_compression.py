"""Compressed batches in a partition's log (``storage.log_compression`` and the appends, reads,
recovery around it): stored as sent, checked inside, recompressed to the topic's codec."""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path

import pytest
from crc32c import crc32c

from chunkraft.broker_agent.storage import DuplicateSequenceError
from chunkraft.dataplane.record_batch import (
    BATCH_HEADER_SIZE,
    build_batch,
    compress,
    decode_records,
    iter_batches,
    parse_header,
    validate_batch,
)
from chunkraft.error_codes import ApiException, Errors
from tests.unit.broker_agent.storage.log_support import SMALL, batch, open_log

CODECS = [1, 2, 3, 4]


def stored(data: bytes) -> list[tuple[int, int, list[bytes | None]]]:
    """(codec, base offset, values) of each batch."""
    return [(h.compression, h.base_offset, [r.value for r in decode_records(v)])
            for h, v in iter_batches(data)]


def with_records_section(template: bytes, section: bytes) -> bytes:
    """``template``'s header around another (already compressed) records section."""
    out = bytearray(template[:BATCH_HEADER_SIZE] + section)
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


@pytest.mark.parametrize("codec", CODECS)
def test_a_compressed_batch_is_stored_as_sent_with_only_its_offset_and_epoch_set(
        tmp_path: Path, codec: int) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(2), leader_epoch=3)
    sent = batch(5, compression=codec)
    info = log.append_as_leader(sent, leader_epoch=3)
    assert (info.first_offset, info.last_offset, info.record_count) == (2, 6, 5)
    assert info.valid_bytes == len(sent) and info.max_timestamp == 1004
    read = log.read(2, 100_000, 100).records
    # Bytes 0-15 (base offset, length, epoch) were rewritten; from the magic on, the
    # producer's bytes, CRC included.
    assert read[16:] == sent[16:]
    header = validate_batch(read, deep=True)
    assert (header.base_offset, header.partition_leader_epoch) == (2, 3)
    assert stored(read) == [(codec, 2, [b"v" * 50] * 5)]
    assert log.offset_for_timestamp(1003) == (5, 1003)  # ListOffsets reads inside it


@pytest.mark.parametrize("codec", CODECS)
def test_compressed_batches_survive_recovery_and_replicate_as_they_are(
        tmp_path: Path, codec: int) -> None:
    log = open_log(tmp_path)
    for i in range(6):  # past SMALL's 4000-byte segments
        log.append_as_leader(batch(20, ts=1000 + 100 * i, compression=codec), leader_epoch=0)
    data = log.read(0, 1 << 20, 1 << 20).records
    log.close_files()  # a crash: nothing flushed, every batch is checked again on open
    again = open_log(tmp_path)
    assert again.log_end_offset == 120
    assert again.read(0, 1 << 20, 1 << 20).records == data
    follower = open_log(tmp_path / "follower")
    info = follower.append_as_follower(data)
    assert (info.first_offset, info.last_offset) == (0, 119)
    assert follower.read(0, 1 << 20, 1 << 20).records == data


def test_many_small_records_compress_below_the_bytes_a_plain_batch_needs(
        tmp_path: Path) -> None:
    log = open_log(tmp_path, replace(SMALL, segment_bytes=1 << 20))
    empty = build_batch([(None, b"", 1_000)] * 2_000, compression=4)
    assert len(empty) < 2_000 * 7  # what the plain-batch check would require
    assert log.append_as_leader(empty, 0).record_count == 2_000
    assert log.log_end_offset == 2_000


def test_a_compressed_batch_whose_records_are_not_what_its_header_says_is_corrupt(
        tmp_path: Path) -> None:
    log = open_log(tmp_path)
    three = build_batch([(b"k", b"v", 1)] * 3, compression=1)
    plain_two = build_batch([(b"k", b"v", 1)] * 2)[BATCH_HEADER_SIZE:]
    out_of_order = bytearray(build_batch([(b"k", b"v", 1)] * 3)[BATCH_HEADER_SIZE:])
    out_of_order[3 + out_of_order[0] // 2 + 1] = 0  # the second record's offset delta -> 0
    cases = {
        "not gzip at all": with_records_section(three, b"plain bytes, not gzip"),
        "gzip cut short": with_records_section(three, compress(1, plain_two * 2)[:-4]),
        "two records where three are counted": with_records_section(three, compress(1, plain_two)),
        "offset deltas 0, 0, 2": with_records_section(three, compress(1, bytes(out_of_order))),
    }
    for name, data in cases.items():
        validate_batch(data)  # the header and CRC are right: only the records are wrong
        with pytest.raises(ApiException) as refused:
            log.append_as_leader(data, 0)
        assert refused.value.error is Errors.CORRUPT_MESSAGE, name
    assert log.log_end_offset == 0


def test_a_batch_decompressing_past_the_limit_is_too_large(tmp_path: Path) -> None:
    config = replace(SMALL, max_batch_bytes=1_000)  # the limit: 64 000 decompressed bytes
    log = open_log(tmp_path, config)
    bomb = build_batch([(b"k", bytes(70_000), 1)], compression=4)
    assert len(bomb) < 1_000
    with pytest.raises(ApiException) as refused:
        log.append_as_leader(bomb, 0)
    assert refused.value.error is Errors.MESSAGE_TOO_LARGE
    assert "more than the limit of 64000 bytes" in refused.value.message
    fits = build_batch([(b"k", bytes(60_000), 1)], compression=4)
    assert log.append_as_leader(fits, 0).record_count == 1


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_a_codec_id_kafka_does_not_have_answers_unsupported_compression_type(
        tmp_path: Path, codec: int) -> None:
    log = open_log(tmp_path)
    data = bytearray(batch(2))
    struct.pack_into(">h", data, 21, codec)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    with pytest.raises(ApiException) as as_leader:
        log.append_as_leader(bytes(data), 0)
    with pytest.raises(ApiException) as as_follower:
        log.append_as_follower(bytes(data))
    assert as_leader.value.error is as_follower.value.error is \
        Errors.UNSUPPORTED_COMPRESSION_TYPE
    assert log.log_end_offset == 0


def test_an_idempotent_compressed_retry_is_a_duplicate(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    sent = batch(3, producer_id=7, producer_epoch=0, base_sequence=0, compression=2)
    log.append_as_leader(sent, 0)
    with pytest.raises(DuplicateSequenceError) as duplicate:
        log.append_as_leader(sent, 0)
    assert (duplicate.value.first_offset, duplicate.value.last_offset) == (0, 2)


def test_log_append_time_stamps_a_compressed_batch_without_touching_its_records(
        tmp_path: Path) -> None:
    log = open_log(tmp_path, replace(SMALL, log_append_time=True))
    sent = batch(3, compression=3)
    log.append_as_leader(sent, 0, now_ms=55_000)
    read = log.read(0, 100_000, 100).records
    assert read[BATCH_HEADER_SIZE:] == sent[BATCH_HEADER_SIZE:]
    assert validate_batch(read, deep=True).is_log_append_time
    assert [r.timestamp for r in decode_records(read)] == [55_000] * 3


@pytest.mark.parametrize(("target", "sent"), [(0, 4), (4, 0), (1, 2), (3, 3), (None, 1)])
def test_the_logs_compression_recompresses_every_batch_sent_otherwise(
        tmp_path: Path, target: int | None, sent: int) -> None:
    log = open_log(tmp_path, replace(SMALL, compression=target))
    log.append_as_leader(batch(1), 0)
    original = batch(4, producer_id=9, producer_epoch=2, base_sequence=0, compression=sent,
                     transactional=True)
    info = log.append_as_leader(original, leader_epoch=6)
    read = log.read(1, 100_000, 100).records
    header = validate_batch(read, deep=True)
    assert header.compression == (sent if target is None else target)
    assert info.valid_bytes == len(read)
    before = parse_header(original)
    assert (header.producer_id, header.producer_epoch, header.base_sequence,
            header.is_transactional, header.max_timestamp, header.base_timestamp,
            header.record_count, header.base_offset, header.partition_leader_epoch) == (
        before.producer_id, before.producer_epoch, before.base_sequence,
        before.is_transactional, before.max_timestamp, before.base_timestamp, 4, 1, 6)
    assert decode_records(read) == [r._replace(offset=r.offset + 1)
                                    for r in decode_records(original)]
    if target is None or target == sent:
        assert read[16:] == original[16:]  # kept as sent


def test_a_batch_too_large_once_recompressed_is_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path, replace(SMALL, compression=0, max_batch_bytes=2_000))
    packed = build_batch([(b"k", bytes(3_000), 1)], compression=1)
    assert len(packed) < 2_000
    with pytest.raises(ApiException) as refused:
        log.append_as_leader(packed, 0)
    assert refused.value.error is Errors.MESSAGE_TOO_LARGE
    assert "once recompressed" in refused.value.message
    assert log.log_end_offset == 0
