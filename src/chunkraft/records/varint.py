"""Unsigned varints (LEB128, as Kafka's ``writeUnsignedVarint``).

Used by the record codec (frame headers, lengths, counts, tags) and by the file format (record
length prefixes). Both read with a byte limit: 10 bytes hold any 64-bit value; a file's record
lengths never need more than :data:`MAX_LENGTH_UVARINT_BYTES`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "MAX_LENGTH_UVARINT_BYTES",
    "MAX_UVARINT_BYTES",
    "SMALL_PREFIXES",
    "decode_uvarint",
    "encode_uvarint",
]

# Ten bytes hold any unsigned 64-bit value; anything longer is garbage.
MAX_UVARINT_BYTES = 10

# A record length is at most the batch limit, far below 2**35, so five bytes always suffice;
# a longer varint can only be garbage and is rejected rather than read on.
MAX_LENGTH_UVARINT_BYTES = 5

# Almost every metadata record is shorter than 128 bytes, so its prefix is one of these;
# indexing a table beats building a one-byte ``bytes`` per record.
SMALL_PREFIXES: tuple[bytes, ...] = tuple(bytes((n,)) for n in range(128))


def encode_uvarint(value: int) -> bytes:
    """The varint bytes of ``value`` (which must be >= 0)."""
    if value < 0:
        raise ValueError(f"uvarint cannot hold a negative value: {value}")
    if value < 0x80:
        return SMALL_PREFIXES[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_uvarint(
    data: Any, position: int, end: int, max_bytes: int = MAX_UVARINT_BYTES
) -> tuple[int, int] | None:
    """``(value, position after it)`` of the varint at ``position``, or None if it does not end
    before ``end`` or is longer than ``max_bytes``."""
    value = 0
    shift = 0
    limit = min(end, position + max_bytes)
    while position < limit:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    return None
