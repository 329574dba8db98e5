"""Kafka's zigzag varints (protobuf style, ``ByteUtils.writeVarint``), as record fields use them.

Private to the ``record_batch`` package; pure and thread-safe.
"""

from __future__ import annotations

# Zigzag varints below 64 (and above -65) are one byte; records use them for most fields.
_ONE_BYTE = tuple(bytes((z,)) for z in range(0x80))
_NULL_LENGTH = b"\x01"  # zigzag(-1)


def _varint(n: int) -> bytes:
    """Zigzag varint of a signed 64-bit value (Kafka's writeVarint / writeVarlong)."""
    z = (n << 1) ^ (n >> 63)
    if z < 0x80:
        return _ONE_BYTE[z]
    if z < 0x4000:
        return ((z & 0x7F) | 0x80 | (z >> 7) << 8).to_bytes(2, "little")
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, next position) of the zigzag varint at ``pos``; IndexError past the end."""
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    z = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = data[pos]
        pos += 1
        z |= (b & 0x7F) << shift
        if b < 0x80:
            return (z >> 1) ^ -(z & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")
