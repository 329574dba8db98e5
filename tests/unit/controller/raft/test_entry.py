"""The entry payload: what encode_entry writes, decode_entry reads back, and nothing else."""

from __future__ import annotations

import pytest

from chunkraft.controller.raft.entry import (
    ANY_OFFSET,
    EntryCorruptError,
    ProposedBatch,
    decode_entry,
    encode_entry,
)

BATCHES = [
    ProposedBatch(bytes(range(16)), 41, 3, 1_700_000_000_000, (b"abc", b"x" * 200), b'{"r":1}'),
    ProposedBatch(b"\x01" * 16, ANY_OFFSET, 3, 0, (b"\x00",), b""),
    ProposedBatch(b"\xff" * 16, 2**40, 2**31 - 1, 2**62, (b"y" * 130, b"", b"z"), b"{}"),
]


def test_round_trip() -> None:
    assert decode_entry(encode_entry(BATCHES)) == BATCHES
    assert decode_entry(encode_entry(BATCHES[1:2])) == BATCHES[1:2]
    assert decode_entry(encode_entry([])) == []


def test_the_payload_starts_with_the_magic_and_is_not_a_pickle() -> None:
    payload = encode_entry(BATCHES)
    assert payload[:4] == b"CRE1"
    assert int.from_bytes(payload[4:8], "big") == len(BATCHES)


def test_a_key_must_be_16_bytes() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        ProposedBatch(b"short", 0, 0, 0, (b"r",))


def test_every_single_byte_flip_raises_entry_corrupt_error() -> None:
    payload = encode_entry(BATCHES)
    for position in range(len(payload)):
        for mask in (0x01, 0x10, 0x80, 0xFF):
            flipped = bytearray(payload)
            flipped[position] ^= mask
            with pytest.raises(EntryCorruptError):
                decode_entry(bytes(flipped))


def test_every_truncation_raises_entry_corrupt_error() -> None:
    payload = encode_entry(BATCHES)
    for length in range(len(payload)):
        with pytest.raises(EntryCorruptError):
            decode_entry(payload[:length])


def test_trailing_bytes_are_refused() -> None:
    with pytest.raises(EntryCorruptError, match="follow"):
        decode_entry(encode_entry(BATCHES) + b"\x00")


@pytest.mark.parametrize("garbage", [b"", b"CRE1", b"CRE1\xff\xff\xff\xff", b"\x80\x02K\x00."])
def test_garbage_raises_entry_corrupt_error(garbage: bytes) -> None:
    with pytest.raises(EntryCorruptError):
        decode_entry(garbage)
