"""A packet delayer in user space, over NFQUEUE: the delay fault on kernels without netem.

Why: our machines' kernel has no ``sch_netem``, no ``fq`` (so a BPF program cannot set
departure times that a qdisc honours) and no nftables ``queue`` expression, but it has
nfnetlink_queue and the xtables ``NFQUEUE`` target. So iptables, in a host's namespace, hands
every packet leaving ``eth0`` to queue *N*::

    iptables -A OUTPUT -o eth0 -j NFQUEUE --queue-num N --queue-bypass

and this process, run in the same namespace (``python -m chunkraft.chaos.delay --delay-ms
200``), holds each one for the delay and then accepts it. Only the standard library: a raw
``AF_NETLINK`` / ``NETLINK_NETFILTER`` socket speaking nfnetlink_queue (the wire format is
the pure functions below, unit-tested byte for byte).

What it does, in order:

- binds queue *N* (``NFQNL_CFG_CMD_BIND``), asks for metadata only (copy mode ``META``: no
  payload is copied), caps the kernel's queue at ``maxlen`` packets
  (``NFQA_CFG_QUEUE_MAXLEN``; 1,000 by default, netem's default limit) and sets ``GSO`` (a
  large segment is queued whole rather than cut up first);
- prints one JSON line ``{"ready": true, ...}`` on stdout: from then on it answers;
- reads each packet's id, notes the time it read it, and accepts it ``delay_ms`` later (plus
  a uniform jitter in ``[-jitter_ms, +jitter_ms]`` if asked) with a *batch* verdict, which
  accepts every packet up to an id at once. Packets leave in arrival order: a packet is never
  released before the one queued ahead of it (netem with jitter reorders; this does not);
- on SIGTERM or SIGINT, when its parent is gone, or after ``max_seconds``: accepts everything
  it holds at once, unbinds, prints one JSON line of counts, exits 0.

When the queue is full (``maxlen`` packets held), the kernel drops the next packet, as netem
drops past its limit; with ``fail_open`` it lets it pass undelayed instead. With no process
bound to the queue (before start, after stop, after a crash) ``--queue-bypass`` lets packets
pass undelayed: so removing the iptables rule first and then stopping this process strands no
packet. Packets the receive buffer (4 MiB) cannot take are dropped by the kernel, like a full
queue (unlikely: a message is about 100 bytes).

Single-threaded; one :class:`Delayer` owns its socket.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import errno
import json
import math
import os
import random
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "DelaySchedule",
    "Delayer",
    "DelayerError",
    "DelayerStats",
    "NetlinkMessage",
    "QueuedPacket",
    "attribute",
    "config_message",
    "main",
    "nfqueue_message",
    "parse_attributes",
    "parse_error",
    "parse_messages",
    "parse_packet",
    "verdict_batch_message",
]

# <linux/netlink.h>, <linux/netfilter/nfnetlink.h>, <linux/netfilter/nfnetlink_queue.h>
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

DEFAULT_MAXLEN = 1000
RECEIVE_BUFFER = 4 << 20
READ_SIZE = 1 << 16
READS_PER_ROUND = 512
ACK_TIMEOUT_SECONDS = 5.0
MAX_WAKE_SECONDS = 1.0
STOP_GRACE_SECONDS = 0.02
DEFAULT_MAX_SECONDS = 24 * 3600.0


class DelayerError(RuntimeError):
    """The kernel refused a request (no nfnetlink_queue, queue already bound, ...)."""


# Wire format --------------------------------------------------------------------------------


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


# Schedule -----------------------------------------------------------------------------------


class DelaySchedule:
    """When each held packet is due, in arrival order. Pure (times are given); not thread-safe.

    A packet read at ``t`` is due at ``max(t + delay + U(-jitter, jitter), previous due)``:
    never before the packet ahead of it, so one batch verdict releases a prefix of the queue.
    """

    def __init__(self, delay: float, jitter: float = 0.0,
                 rng: random.Random | None = None) -> None:
        if delay <= 0:
            raise ValueError("delay must be positive")
        if not 0 <= jitter <= delay:
            raise ValueError("jitter must be within 0 .. delay")
        self.delay = delay
        self.jitter = jitter
        self._rng = rng or random.Random()
        self._held: collections.deque[tuple[float, int]] = collections.deque()
        self._last_due = -math.inf
        self.max_held = 0
        self.max_late = 0.0

    def __len__(self) -> int:
        return len(self._held)

    def add(self, packet_id: int, arrival: float) -> float:
        """Holds ``packet_id``, read at ``arrival``; returns when it is due."""
        offset = self._rng.uniform(-self.jitter, self.jitter) if self.jitter else 0.0
        due = max(arrival + self.delay + offset, self._last_due)
        self._last_due = due
        self._held.append((due, packet_id))
        self.max_held = max(self.max_held, len(self._held))
        return due

    def next_due(self) -> float | None:
        return self._held[0][0] if self._held else None

    def pop_due(self, now: float) -> int | None:
        """Forgets every packet due by ``now``; the last one's id (None: none due)."""
        last = None
        while self._held and self._held[0][0] <= now:
            due, last = self._held.popleft()
            self.max_late = max(self.max_late, now - due)
        return last

    def pop_all(self) -> int | None:
        """Forgets every held packet, due or not; the last one's id (None: none held)."""
        last = self._held[-1][1] if self._held else None
        self._held.clear()
        return last


# The delayer --------------------------------------------------------------------------------


class NetlinkSocket(Protocol):
    """What :class:`Delayer` needs of its socket (a netlink socket, or a test's socketpair)."""

    def send(self, data: bytes, /) -> int: ...

    def recv(self, size: int, /) -> bytes: ...

    def fileno(self) -> int: ...

    def settimeout(self, value: float | None, /) -> None: ...


@dataclass
class DelayerStats:
    """Counts a delayer reports when it stops (one JSON line)."""

    queue: int
    delay_ms: float
    jitter_ms: float
    packets: int = 0
    verdicts: int = 0
    released_at_stop: int = 0
    max_held: int = 0
    max_late_ms: float = 0.0
    errors: int = 0
    stopped_by: str = ""


@dataclass
class Delayer:
    """Holds the packets of one NFQUEUE for a :class:`DelaySchedule` (see the module doc).

    ``sock`` must be connected to the kernel (or a test double); ``clock`` gives seconds.
    Single-threaded.
    """

    sock: NetlinkSocket
    queue: int
    schedule: DelaySchedule
    clock: Callable[[], float] = time.monotonic
    stats: DelayerStats = dataclasses.field(init=False)
    _seq: int = dataclasses.field(default=0, init=False)

    def __post_init__(self) -> None:
        self.stats = DelayerStats(self.queue, self.schedule.delay * 1000,
                                  self.schedule.jitter * 1000)

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def configure(self, *, maxlen: int = DEFAULT_MAXLEN, fail_open: bool = False) -> None:
        """Binds the queue and sets copy mode META, ``maxlen`` and the flags; waits for acks."""
        self._request(config_message(self.queue, seq=self._next_seq(),
                                     command=NFQNL_CFG_CMD_BIND), "bind")
        flags = NFQA_CFG_F_GSO | (NFQA_CFG_F_FAIL_OPEN if fail_open else 0)
        self._request(config_message(self.queue, seq=self._next_seq(),
                                     copy_mode=NFQNL_COPY_META, maxlen=maxlen, flags=flags,
                                     flags_mask=NFQA_CFG_F_GSO | NFQA_CFG_F_FAIL_OPEN),
                      "configure")

    def unbind(self) -> None:
        """Unbinds the queue, unacknowledged: closing the socket would unbind it anyway."""
        self.sock.send(config_message(self.queue, seq=self._next_seq(),
                                      command=NFQNL_CFG_CMD_UNBIND, ack=False))

    def _request(self, message: bytes, what: str) -> None:
        """Sends an acknowledged request; packets read meanwhile are held as usual."""
        (seq,) = struct.unpack_from("=I", message, 8)
        self.sock.send(message)
        deadline = self.clock() + ACK_TIMEOUT_SECONDS
        self.sock.settimeout(ACK_TIMEOUT_SECONDS)
        try:
            for _ in range(READS_PER_ROUND):
                if self.clock() > deadline:
                    break
                try:
                    data = self.sock.recv(READ_SIZE)
                except TimeoutError:
                    break
                code = None
                for reply in parse_messages(data):
                    if reply.kind == NLMSG_ERROR and reply.seq == seq:
                        code = parse_error(reply)
                    else:
                        self._handle(reply, self.clock())
                if code is not None:
                    if code:
                        raise DelayerError(f"nfnetlink_queue {what} of queue {self.queue}: "
                                           f"{errno.errorcode.get(code, code)} "
                                           f"({os.strerror(code)})")
                    return
        finally:
            self.sock.settimeout(0.0)
        raise DelayerError(f"nfnetlink_queue {what} of queue {self.queue}: no answer")

    def _handle(self, message: NetlinkMessage, now: float) -> None:
        if message.is_packet:
            packet = parse_packet(message)
            self.schedule.add(packet.packet_id, now)
            self.stats.packets += 1
        elif message.kind == NLMSG_ERROR and parse_error(message) != 0:
            # A verdict refused (e.g. for ids the kernel no longer holds): counted, not fatal.
            self.stats.errors += 1

    def read_available(self) -> int:
        """Reads what the socket holds now (at most READS_PER_ROUND datagrams)."""
        count = 0
        for _ in range(READS_PER_ROUND):
            try:
                data = self.sock.recv(READ_SIZE)
            except (BlockingIOError, InterruptedError, TimeoutError):
                break
            except OSError as error:
                if error.errno != errno.ENOBUFS:
                    raise
                self.stats.errors += 1
                continue
            now = self.clock()
            for message in parse_messages(data):
                self._handle(message, now)
            count += 1
        return count

    def _accept_through(self, packet_id: int | None) -> None:
        if packet_id is not None:
            self.sock.send(verdict_batch_message(self.queue, packet_id, seq=self._next_seq()))
            self.stats.verdicts += 1

    def release_due(self) -> None:
        """Accepts every packet whose delay has passed (one batch verdict)."""
        self._accept_through(self.schedule.pop_due(self.clock()))

    def release_all(self) -> None:
        """Accepts every packet held, due or not."""
        held = len(self.schedule)
        self._accept_through(self.schedule.pop_all())
        self.stats.released_at_stop += held

    def timeout(self) -> float:
        """Seconds until the next packet is due (at most MAX_WAKE_SECONDS)."""
        due = self.schedule.next_due()
        if due is None:
            return MAX_WAKE_SECONDS
        return min(MAX_WAKE_SECONDS, max(0.0, due - self.clock()))

    def run(self, wake_fd: int, *, max_seconds: float = DEFAULT_MAX_SECONDS,
            parent: int | None = None) -> None:
        """Delays packets until ``wake_fd`` is readable (a signal), the parent ``parent`` is
        gone or ``max_seconds`` passed; then accepts everything held."""
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN)
        poller.register(wake_fd, select.POLLIN)
        end = self.clock() + max_seconds
        self.stats.stopped_by = "max_seconds"
        # Bounded by max_seconds: each round ends by a packet due, a packet read, a signal or
        # MAX_WAKE_SECONDS, and checks the time.
        while self.clock() < end:
            self.release_due()
            if parent is not None and os.getppid() != parent:
                self.stats.stopped_by = "parent gone"
                break
            # Rounded up, so a poll never ends just before a packet is due (no busy loop).
            events = poller.poll(math.ceil(self.timeout() * 1000))
            if any(fd == wake_fd for fd, _ in events):
                self.stats.stopped_by = "signal"
                break
            if events:
                self.read_available()
        self.stop()

    def stop(self) -> None:
        """Accepts every packet held, including any still unread; unbinds."""
        # Twice, a moment apart: a packet queued while the rule was being removed is read too.
        for _ in range(2):
            self.read_available()
            self.release_all()
            time.sleep(STOP_GRACE_SECONDS)
        self.stats.max_held = self.schedule.max_held
        self.stats.max_late_ms = round(self.schedule.max_late * 1000, 3)
        self.unbind()


# The process --------------------------------------------------------------------------------


def open_socket() -> socket.socket:
    """A NETLINK_NETFILTER socket with a large receive buffer that reports no ENOBUFS."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RECEIVE_BUFFER)
    except PermissionError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.setsockopt(SOL_NETLINK, NETLINK_NO_ENOBUFS, 1)
    sock.bind((0, 0))
    return sock


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m chunkraft.chaos.delay",
                                     description="Delays the packets of one NFQUEUE.")
    parser.add_argument("--queue", type=int, default=0, help="queue number (0 .. 65535)")
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--maxlen", type=int, default=DEFAULT_MAXLEN,
                        help="packets held at most; past it the kernel drops (or, with "
                             "--fail-open, passes) the next one")
    parser.add_argument("--fail-open", action="store_true")
    parser.add_argument("--max-seconds", type=float, default=DEFAULT_MAX_SECONDS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    schedule = DelaySchedule(args.delay_ms / 1000, args.jitter_ms / 1000)
    parent = os.getppid()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda _signum, _frame: None)
    with open_socket() as sock:
        delayer = Delayer(sock, args.queue, schedule)
        try:
            delayer.configure(maxlen=args.maxlen, fail_open=args.fail_open)
        except DelayerError as error:
            print(f"chunkraft.chaos.delay: {error}", file=sys.stderr)
            return 2
        print(json.dumps({"ready": True, "queue": args.queue, "pid": os.getpid()}), flush=True)
        delayer.run(wake_read, max_seconds=args.max_seconds, parent=parent)
        print(json.dumps(dataclasses.asdict(delayer.stats)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
