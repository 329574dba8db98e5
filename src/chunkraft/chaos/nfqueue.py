"""nfnetlink_queue's wire format: the messages a userspace NFQUEUE listener sends and reads.

Pure functions over bytes, standard library only, for :mod:`chunkraft.chaos.delay`. A
message is a netlink header (host byte order), an ``nfgenmsg`` whose resource id is the queue
number (network order), then attributes (header in host order, payload padded to 4 bytes;
nfnetlink_queue's payload structures are in network order). The constants are the kernel's,
from ``<linux/netlink.h>``, ``<linux/netfilter/nfnetlink.h>`` and
``<linux/netfilter/nfnetlink_queue.h>``.

A listener binds a queue (``config_message(command=NFQNL_CFG_CMD_BIND)``), sets its copy mode,
length and flags (another ``config_message``), reads ``NFQNL_MSG_PACKET`` messages
(:func:`parse_packet`) and answers with verdicts; :func:`verdict_batch_message` gives one
verdict to every packet of the queue up to an id.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

__all__ = [
    "NetlinkMessage",
    "QueuedPacket",
    "attribute",
    "config_message",
    "nfqueue_message",
    "parse_attributes",
    "parse_error",
    "parse_messages",
    "parse_packet",
    "verdict_batch_message",
]

NETLINK_NETFILTER = 12
SOL_NETLINK = 270
NETLINK_NO_ENOBUFS = 5
SO_RCVBUFFORCE = 33
NLM_F_REQUEST = 0x1
NLM_F_ACK = 0x4
NLMSG_ERROR = 0x2
NLMSG_DONE = 0x3
NLMSG_HEADER = struct.Struct("=IHHII")  # length, type, flags, sequence, port id
NLA_HEADER = struct.Struct("=HH")  # length, type
NLA_TYPE_MASK = 0x3FFF  # without NLA_F_NESTED and NLA_F_NET_BYTEORDER
NFGENMSG = struct.Struct("!BBH")  # family, version, resource id (the queue number)
NFNETLINK_V0 = 0
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET = 0
NFQNL_MSG_VERDICT = 1
NFQNL_MSG_CONFIG = 2
NFQNL_MSG_VERDICT_BATCH = 3
NFQA_PACKET_HDR = 1
NFQA_VERDICT_HDR = 2
NFQA_CFG_CMD = 1
NFQA_CFG_PARAMS = 2
NFQA_CFG_QUEUE_MAXLEN = 3
NFQA_CFG_MASK = 4
NFQA_CFG_FLAGS = 5
NFQNL_CFG_CMD_BIND = 1
NFQNL_CFG_CMD_UNBIND = 2
NFQNL_COPY_META = 1
NFQA_CFG_F_FAIL_OPEN = 0x1
NFQA_CFG_F_GSO = 0x4
NF_DROP = 0
NF_ACCEPT = 1
PACKET_HDR = struct.Struct("!IHB")  # packet id, hardware protocol, hook
VERDICT_HDR = struct.Struct("!II")  # verdict, packet id


def _align(length: int) -> int:
    return (length + 3) & ~3


def attribute(kind: int, payload: bytes) -> bytes:
    """One netlink attribute: header in host order, payload, padding to 4 bytes."""
    length = NLA_HEADER.size + len(payload)
    return NLA_HEADER.pack(length, kind) + payload + b"\0" * (_align(length) - length)


def nfqueue_message(kind: int, queue: int, attributes: bytes = b"", *, seq: int,
                    flags: int = NLM_F_REQUEST, family: int = socket.AF_UNSPEC) -> bytes:
    """An nfnetlink_queue message: netlink header, nfgenmsg (queue number), attributes."""
    if not 0 <= queue <= 0xFFFF:
        raise ValueError(f"queue {queue} outside 0 .. 65535")
    body = NFGENMSG.pack(family, NFNETLINK_V0, queue) + attributes
    return NLMSG_HEADER.pack(NLMSG_HEADER.size + len(body), (NFNL_SUBSYS_QUEUE << 8) | kind,
                             flags, seq, 0) + body


def config_message(queue: int, *, seq: int, command: int | None = None,
                   copy_mode: int | None = None, copy_range: int = 0,
                   maxlen: int | None = None, flags: int | None = None,
                   flags_mask: int | None = None, ack: bool = True) -> bytes:
    """An ``NFQNL_MSG_CONFIG`` request (acknowledged if ``ack``): a command and/or settings.

    ``flags`` sets exactly the bits in ``flags_mask`` (the kernel requires the mask; by default
    the mask is ``flags`` itself).
    """
    parts = []
    if command is not None:
        parts.append(attribute(NFQA_CFG_CMD, struct.pack("!BxH", command, socket.AF_UNSPEC)))
    if copy_mode is not None:
        parts.append(attribute(NFQA_CFG_PARAMS, struct.pack("!IB", copy_range, copy_mode)))
    if maxlen is not None:
        if maxlen <= 0:
            raise ValueError("the queue's length must be positive")
        parts.append(attribute(NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", maxlen)))
    if flags is not None:
        mask = flags if flags_mask is None else flags_mask
        parts.append(attribute(NFQA_CFG_FLAGS, struct.pack("!I", flags)))
        parts.append(attribute(NFQA_CFG_MASK, struct.pack("!I", mask)))
    return nfqueue_message(NFQNL_MSG_CONFIG, queue, b"".join(parts), seq=seq,
                           flags=NLM_F_REQUEST | (NLM_F_ACK if ack else 0))


def verdict_batch_message(queue: int, packet_id: int, *, seq: int,
                          verdict: int = NF_ACCEPT) -> bytes:
    """One verdict for every packet of ``queue`` with an id up to ``packet_id``.

    Not acknowledged (an ack per verdict would double the traffic); the kernel still answers
    an error with an ``NLMSG_ERROR``.
    """
    return nfqueue_message(NFQNL_MSG_VERDICT_BATCH, queue,
                           attribute(NFQA_VERDICT_HDR, VERDICT_HDR.pack(verdict, packet_id)),
                           seq=seq)


@dataclass(frozen=True)
class NetlinkMessage:
    """One netlink message as read: its type, flags, sequence number and payload."""

    kind: int
    flags: int
    seq: int
    payload: bytes

    @property
    def is_packet(self) -> bool:
        return self.kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET


def parse_messages(data: bytes) -> list[NetlinkMessage]:
    """The netlink messages in one datagram; ValueError if one is cut short."""
    messages = []
    offset = 0
    while offset + NLMSG_HEADER.size <= len(data):
        length, kind, flags, seq, _port = NLMSG_HEADER.unpack_from(data, offset)
        if length < NLMSG_HEADER.size or offset + length > len(data):
            raise ValueError(f"netlink message of length {length} at {offset} in {len(data)}")
        messages.append(NetlinkMessage(kind, flags, seq,
                                       bytes(data[offset + NLMSG_HEADER.size:offset + length])))
        offset += _align(length)
    return messages


def parse_attributes(data: bytes) -> dict[int, bytes]:
    """Attribute type -> payload (flags bits cleared; the last wins if one repeats)."""
    found: dict[int, bytes] = {}
    offset = 0
    while offset + NLA_HEADER.size <= len(data):
        length, kind = NLA_HEADER.unpack_from(data, offset)
        if length < NLA_HEADER.size or offset + length > len(data):
            raise ValueError(f"attribute of length {length} at {offset} in {len(data)}")
        found[kind & NLA_TYPE_MASK] = bytes(data[offset + NLA_HEADER.size:offset + length])
        offset += _align(length)
    return found


@dataclass(frozen=True)
class QueuedPacket:
    """What the delayer learns of a queued packet (copy mode META: no payload)."""

    queue: int
    packet_id: int
    hw_protocol: int
    hook: int


def parse_packet(message: NetlinkMessage) -> QueuedPacket:
    """The packet an ``NFQNL_MSG_PACKET`` announces; ValueError if it is not one."""
    if not message.is_packet:
        raise ValueError(f"message type {message.kind:#x} is not a queued packet")
    _family, _version, queue = NFGENMSG.unpack_from(message.payload)
    attributes = parse_attributes(message.payload[NFGENMSG.size:])
    header = attributes.get(NFQA_PACKET_HDR)
    if header is None or len(header) < PACKET_HDR.size:
        raise ValueError("queued packet without its packet header")
    packet_id, hw_protocol, hook = PACKET_HDR.unpack_from(header)
    return QueuedPacket(queue, packet_id, hw_protocol, hook)


def parse_error(message: NetlinkMessage) -> int:
    """The errno of an ``NLMSG_ERROR`` (0: an acknowledgement)."""
    if message.kind != NLMSG_ERROR:
        raise ValueError(f"message type {message.kind:#x} is not an error")
    (code,) = struct.unpack_from("=i", message.payload)
    return int(-code)

