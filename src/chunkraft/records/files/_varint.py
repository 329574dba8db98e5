"""Unsigned varints (LEB128, as Kafka's ``writeUnsignedVarint``) for record length prefixes.

The length prefix belongs to the file format, not to the record codec, so the batch layer keeps
its own small copy: a change to the codec's internals can never change how files are framed.
"""

from __future__ import annotations

__all__ = ["MAX_UVARINT_BYTES", "SMALL_PREFIXES", "decode_uvarint", "encode_uvarint"]

# A record length is at most the batch limit, far below 2**35, so five bytes always suffice;
# a longer varint can only be garbage and is rejected rather than read on.
MAX_UVARINT_BYTES = 5

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


def decode_uvarint(data: bytes, position: int, end: int) -> tuple[int, int] | None:
    """``(value, position after it)`` of the varint at ``position``, or None if it does not end
    before ``end`` or is longer than :data:`MAX_UVARINT_BYTES`."""
    value = 0
    shift = 0
    limit = min(end, position + MAX_UVARINT_BYTES)
    while position < limit:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    return None
