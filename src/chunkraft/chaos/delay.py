"""A packet delayer in user space, over NFQUEUE: the delay fault on kernels without netem.

Why: our machines' kernel has no ``sch_netem``, no ``fq`` (so a BPF program cannot set
departure times that a qdisc honours) and no nftables ``queue`` expression, but it has
nfnetlink_queue and the xtables ``NFQUEUE`` target. So iptables hands packets to queue *N*
and this process, run in the same namespace (``python -m chunkraft.chaos.delay --queue N
--delay-ms 200``), holds each one for the delay and then accepts it. Only the standard
library: a raw ``AF_NETLINK`` / ``NETLINK_NETFILTER`` socket speaking nfnetlink_queue (the
wire format is :mod:`chunkraft.chaos.nfqueue`, pure functions unit-tested byte for byte).

:meth:`chunkraft.chaos.faults.NetworkFaults.delay` delays what host *i* sends by running one
of these in every *other* host's namespace, behind::

    iptables -A INPUT -i eth0 -s <host i>/32 -j NFQUEUE --queue-num 200+i --queue-bypass

On arrival rather than in host *i*'s ``OUTPUT``: a packet held before it leaves still counts
against its TCP socket's small-queue budget (netem orphans the packets it holds; a queue
cannot), so a bulk transfer would be held to about two segments per delay (measured: 0.03
MB/s at 200 ms, against 7 MB/s held on arrival).

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

from chunkraft.chaos.nfqueue import (
    NETLINK_NETFILTER,
    NETLINK_NO_ENOBUFS,
    NFQA_CFG_F_FAIL_OPEN,
    NFQA_CFG_F_GSO,
    NFQNL_CFG_CMD_BIND,
    NFQNL_CFG_CMD_UNBIND,
    NFQNL_COPY_META,
    NLMSG_ERROR,
    SO_RCVBUFFORCE,
    SOL_NETLINK,
    NetlinkMessage,
    config_message,
    parse_error,
    parse_messages,
    parse_packet,
    verdict_batch_message,
)

__all__ = [
    "DelaySchedule",
    "Delayer",
    "DelayerError",
    "DelayerStats",
    "main",
]

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
            wait = min(self.timeout(), max(0.0, end - self.clock()))
            events = poller.poll(math.ceil(wait * 1000))
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
        try:
            print(json.dumps(dataclasses.asdict(delayer.stats)), flush=True)
        except BrokenPipeError:
            # The parent is gone, nobody reads the counts; stdout is pointed away so that
            # the interpreter's own flush at exit does not fail again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
