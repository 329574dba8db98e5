"""The entry payload: what encode_entry writes, decode_entry reads back, and nothing else."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkraft.controller.raft.entry import (
    ANY_OFFSET,
    MAX_EPOCH,
    EntryCorruptError,
    EpochOutOfRangeError,
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
        for mask in (*(1 << bit for bit in range(8)), 0xFF):
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


batches = st.builds(
    ProposedBatch,
    st.binary(min_size=16, max_size=16),
    st.integers(-1, 2**63 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(0, 2**63 - 1),
    st.lists(st.binary(max_size=300), max_size=5).map(tuple),
    st.binary(max_size=50),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(batches, max_size=4))
def test_any_batches_round_trip(proposed: list[ProposedBatch]) -> None:
    assert decode_entry(encode_entry(proposed)) == proposed


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.sampled_from([b"", b"CRE1", b"CRE1\x00\x00\x00\x01"]))
def test_arbitrary_bytes_never_raise_anything_else(garbage: bytes, prefix: bytes) -> None:
    try:
        decoded = decode_entry(prefix + garbage)
    except EntryCorruptError:
        return
    assert prefix + garbage == encode_entry(decoded)  # only a real entry decodes


@given(st.integers(MAX_EPOCH + 1, 2**64))
def test_an_epoch_past_int32_is_a_typed_error_not_a_struct_error(epoch: int) -> None:
    """A term of 71776119061217291 made every barrier raise struct.error (HTTP 500)."""
    batch = ProposedBatch(b"\x01" * 16, ANY_OFFSET, epoch, 0, (b"\x00",), b"")
    with pytest.raises(EpochOutOfRangeError, match=str(epoch)):
        encode_entry([BATCHES[0], batch])
