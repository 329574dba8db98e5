"""Messages as the kernel's nfnetlink_queue sends them, built by hand for the tests."""

from __future__ import annotations

import socket
import struct

from chunkraft.chaos.nfqueue import attribute

QUEUE_TYPE = 3 << 8  # NFNL_SUBSYS_QUEUE in the high byte


def nlmsg(kind: int, flags: int, seq: int, body: bytes) -> bytes:
    return struct.pack("=IHHII", 16 + len(body), kind, flags, seq, 0) + body


def kernel_packet(queue: int, packet_id: int, *, hook: int = 3) -> bytes:
    """An NFQNL_MSG_PACKET as the kernel sends it in copy mode META."""
    body = (struct.pack("!BBH", socket.AF_INET, 0, queue)
            + attribute(1, struct.pack("!IHB", packet_id, 0x0800, hook))
            + attribute(6, struct.pack("!I", 2))            # NFQA_IFINDEX_OUTDEV
            + attribute(0x8000 | 11, attribute(1, b"\0\0\0\0")))  # a nested NFQA_CT
    return nlmsg(QUEUE_TYPE | 0, 0, 0, body)


def ack(seq: int, code: int = 0) -> bytes:
    return nlmsg(2, 0, seq, struct.pack("=i", -code) + struct.pack("=IHHII", 16, 0, 0, seq, 0))
