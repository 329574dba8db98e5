"""Kafka's zigzag varints (``record_batch.varint``): what is written is read back, byte for byte."""

from __future__ import annotations

import pytest

from chunkraft.dataplane.record_batch.varint import _read_varint, _varint


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (8191, b"\xfe\x7f"),
        (8192, b"\x80\x80\x01"),
    ],
)
def test_zigzag_bytes_are_kafkas(value: int, encoded: bytes) -> None:
    # Kafka's ByteUtils.writeVarint: zigzag, then 7 bits a byte, low first.
    assert _varint(value) == encoded
    assert _read_varint(b"\xaa" + encoded + b"\xbb", 1) == (value, 1 + len(encoded))


def test_round_trip_across_the_int64_range() -> None:
    for value in (2**31 - 1, -(2**31), 2**40, 2**63 - 1, -(2**63)):
        encoded = _varint(value)
        assert _read_varint(encoded, 0) == (value, len(encoded))


def test_a_varint_past_ten_bytes_or_the_end_is_refused() -> None:
    with pytest.raises(ValueError):
        _read_varint(b"\xff" * 11, 0)
    with pytest.raises(IndexError):
        _read_varint(b"\x80", 0)
