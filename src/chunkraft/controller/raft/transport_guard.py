"""GuardedTransport: pysyncobj's TCP transport, bounded against peers that have not authenticated.

pysyncobj 0.3.17 (``tcp_connection.py``) reads a 4-byte length prefix and then buffers that many
bytes, whatever they are and whoever sent them, before it tries to decrypt anything: a plain TCP
client that announces 2 GiB and sends zeros makes the Raft thread copy an ever-growing ``bytes``
(``buffer += chunk`` per 64 KiB read: quadratic) until the sender stops. 16 MiB forced an
election; 64 MiB stalled the Raft thread for about 60 s. pysyncobj also never times out a
connection that has no socket events (an idle one), keeps at most 5 connections in its listen
backlog, accepts one connection per poll, and unbinds its server for good on any ``accept``
error (``EMFILE`` included).

The password (Fernet) is what authenticates a peer: the first message of a connection carries
the sender's random key, the next ones must carry ours (``recvRandKey``), so a connection is
*authenticated* once a message has decrypted and carried our key. Until then this transport:

- checks every length prefix as soon as its 4 bytes are in, before reading more: more than
  :data:`UNAUTHENTICATED_MAX_MESSAGE_BYTES` (the handshake's messages are ~200 bytes) closes the
  connection, so at most one read (64 KiB) of junk is ever buffered;
- closes a connection whose message does not decrypt or does not carry our key;
- closes a connection that has not authenticated within ``handshake_timeout`` (an idle or
  dribbling one), checked by a sweep on the Raft tick, not only when the socket has events;
- holds at most ``max_connections_per_address`` unauthenticated incoming connections per remote
  IP: a new one evicts that address's oldest (a real peer's handshake takes milliseconds, an
  attacker's idle connection lasts until its timeout).

An authenticated connection may announce up to ``max_message_bytes`` (see
:data:`LARGEST_LEGITIMATE_MESSAGE_BYTES` for why that is large) and must complete each message
within ``message_timeout``. Every read is non-blocking and bounded per poll event, so the Raft
thread never waits on a peer. The normal path costs one length check per message and one clock
read per tick (the sweep runs every :data:`SWEEP_PERIOD` seconds).

Everything is hooked through pysyncobj's ``transportClass`` argument: subclasses of its
``TCPTransport``, ``TcpServer`` and ``TcpConnection``, overriding the connection's private read
and parse methods (checked at import: a pysyncobj that renamed them fails loudly here).
"""

from __future__ import annotations

import errno
import functools
import logging
import socket
import struct
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pysyncobj.pickle as _pickle
from pysyncobj.poller import POLL_EVENT_TYPE
from pysyncobj.tcp_connection import CONNECTION_STATE, TcpConnection
from pysyncobj.tcp_server import TcpServer
from pysyncobj.transport import TCPTransport

from chunkraft.controller.raft.clock import raft_clock

__all__ = [
    "APPEND_ENTRIES_BATCH_BYTES",
    "LARGEST_LEGITIMATE_MESSAGE_BYTES",
    "UNAUTHENTICATED_MAX_MESSAGE_BYTES",
    "GuardedTcpConnection",
    "GuardedTransport",
    "TransportGuard",
    "TransportLimits",
    "guarded_transport",
]

logger = logging.getLogger(__name__)

for _owner, _name in ((TcpConnection, "_TcpConnection__tryReadBuffer"),
                      (TcpConnection, "_TcpConnection__processParseMessage"),
                      (TcpServer, "_TcpServer__onNewConnection")):
    if not hasattr(_owner, _name):
        raise ImportError(f"pysyncobj changed: {_owner.__name__} has no {_name}; "
                          "review chunkraft.controller.raft.transport_guard")

_MIB = 1024 * 1024

APPEND_ENTRIES_BATCH_BYTES = 64 * _MIB
"""pysyncobj's ``appendEntriesBatchSizeBytes`` as RaftNode sets it: an AppendEntries carries
entries until their command bytes reach this (so up to this plus one entry), and an entry of
this size or more travels in pieces of this size (see ``node.py`` for why it is this large)."""

LARGEST_LEGITIMATE_MESSAGE_BYTES = 180 * _MIB
"""An upper bound of the largest message a chunkraft peer sends, framed as on the wire.

An AppendEntries holds up to ``2 x APPEND_ENTRIES_BATCH_BYTES`` of commands (a batch just short
of the size plus one entry just short of it; a larger entry goes in pieces). pysyncobj pickles
that (protocol 2: bytes become latin-1 text), compresses it (zlib, level 3) and encrypts it
(Fernet: base64, so 4/3) — at worst 4/3 x 128 MiB x 1.001 + framing, about 171 MiB, for
incompressible commands. Measured (``docs/controller.md``): 64 MiB of 2,000-record createTopics
entries went out as 3.1 MiB, 64 MiB of random 1 MiB entries as 80.5 MiB. Dump transfers go in
64 KiB pieces. ``raft.max.message.bytes`` may not be set below this."""

DEFAULT_MAX_MESSAGE_BYTES = 256 * _MIB
"""Above :data:`LARGEST_LEGITIMATE_MESSAGE_BYTES` with room to spare; only authenticated peers
(who hold the password) can make a node buffer this much."""

UNAUTHENTICATED_MAX_MESSAGE_BYTES = 64 * 1024
"""The largest message accepted before a connection has authenticated. The handshake's two
messages (a 32-byte random key, then a node address, each pickled, compressed and encrypted)
are about 150 and 250 bytes; pysyncobj's admin commands are as small."""

AUTHENTICATED_READ_BUDGET = 4 * _MIB
"""Bytes read from one authenticated connection per poll event; the poll is level-triggered,
so the rest is read on the next tick and no connection keeps the Raft thread to itself."""

SWEEP_PERIOD = 0.1
"""How often (seconds, on the Raft tick) connections are checked against their deadlines."""

STALL = 1.0
"""A gap this long between sweeps means the Raft thread itself was held up (a dump load, a
long apply): the first sweep after it only resets the clock, so that connections whose bytes
arrived during the stall are read (this tick's poll) before their deadlines are judged."""

_ACCEPTS_PER_EVENT = 32
_LISTEN_BACKLOG = 128
_LOG_EVERY = 10.0
_LENGTH = struct.Struct("i")  # pysyncobj's prefix: native signed 32-bit
_RETRY = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR})
# accept() errors after which the server must stay bound: pysyncobj unbinds for good on any.
_TRANSIENT_ACCEPT = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM,
                               errno.ECONNABORTED, errno.EPROTO, errno.EPERM})


@dataclass(frozen=True, slots=True)
class TransportLimits:
    """The guard's limits (times in seconds); see the module doc for what each one bounds."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_connections_per_address: int = 8
    handshake_timeout: float = 5.0
    message_timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.max_message_bytes < UNAUTHENTICATED_MAX_MESSAGE_BYTES:
            raise ValueError("max_message_bytes must be at least "
                             f"{UNAUTHENTICATED_MAX_MESSAGE_BYTES}")
        if self.max_connections_per_address < 1:
            raise ValueError("max_connections_per_address must be at least 1")
        if self.handshake_timeout <= 0 or self.message_timeout <= 0:
            raise ValueError("timeouts must be positive")


class TransportGuard:
    """The state the guard keeps for one transport: live connections, unauthenticated incoming
    connections per remote address, and counts of the connections it closed by reason.

    Used only from pysyncobj's tick thread, except :meth:`closed_counts`, which copies a dict
    (safe to call from any thread under the GIL).
    """

    def __init__(self, limits: TransportLimits,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self._live: set[GuardedTcpConnection] = set()
        self._pending: dict[str, list[GuardedTcpConnection]] = {}
        self._closed: dict[str, int] = {}
        self._logged_at: dict[str, float] = {}
        self._unlogged: dict[str, int] = {}
        self._next_sweep = 0.0
        self._last_sweep: float | None = None

    def closed_counts(self) -> Mapping[str, int]:
        """Connections this guard closed, by reason (``oversize``, ``undecryptable``,
        ``handshake_timeout``, ``message_timeout``, ``per_address``)."""
        return dict(self._closed)

    def unauthenticated(self, address: str) -> int:
        """Unauthenticated incoming connections from ``address`` now open."""
        return len(self._pending.get(address, ()))

    def live(self) -> int:
        """Connections being watched (incoming not yet closed, outgoing connecting or up)."""
        return len(self._live)

    def admit(self, conn: GuardedTcpConnection, address: str) -> None:
        """Registers a new incoming connection, evicting ``address``'s oldest unauthenticated
        one first if it already has as many as allowed."""
        cap = self.limits.max_connections_per_address
        while len(self._pending.get(address, ())) >= cap:
            self._pending[address][0].reject(
                "per_address", f"more than {cap} unauthenticated connections from this address")
        self._pending.setdefault(address, []).append(conn)
        self._live.add(conn)

    def watch(self, conn: GuardedTcpConnection) -> None:
        self._live.add(conn)

    def authenticated(self, conn: GuardedTcpConnection) -> None:
        self._unpend(conn)

    def forget(self, conn: GuardedTcpConnection) -> None:
        self._live.discard(conn)
        self._unpend(conn)

    def _unpend(self, conn: GuardedTcpConnection) -> None:
        if conn.remote is None:
            return
        pending = self._pending.get(conn.remote)
        if pending is None:
            return
        if conn in pending:
            pending.remove(conn)
        if not pending:
            del self._pending[conn.remote]

    def sweep(self) -> None:
        """Closes connections past their deadlines; cheap unless a sweep is due."""
        now = self.clock()
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_PERIOD
        last, self._last_sweep = self._last_sweep, now
        if last is not None and now - last > STALL:
            return
        for conn in list(self._live):
            conn.check_deadlines(now)

    def record(self, reason: str, conn: GuardedTcpConnection, detail: str) -> None:
        self._closed[reason] = self._closed.get(reason, 0) + 1
        # An attacker can make many of these a second: log the first of each kind, then at most
        # one line per kind every _LOG_EVERY seconds with the count of those not logged.
        now = self.clock()
        last = self._logged_at.get(reason)
        if last is not None and now - last < _LOG_EVERY:
            self._unlogged[reason] = self._unlogged.get(reason, 0) + 1
            return
        self._logged_at[reason] = now
        unlogged = self._unlogged.pop(reason, 0)
        logger.warning("Raft transport: closed a connection %s %s (%s): %s%s",
                       "from" if conn.incoming else "to", conn.remote or "?", reason, detail,
                       f" ({unlogged} more since the last report)" if unlogged else "")


class GuardedTcpConnection(TcpConnection):  # type: ignore[misc]
    """pysyncobj's TcpConnection with bounded reads (see the module doc).

    Replaces the connection's read loop and message parser; sending, connecting and the
    callbacks are pysyncobj's. Used only from pysyncobj's tick thread.
    """

    recvLastTimestamp: int  # pysyncobj's attributes this class assigns

    def __init__(self, guard: TransportGuard, *, incoming: bool, remote: str | None,
                 **kwargs: Any) -> None:
        self.guard = guard
        self.incoming = incoming
        self.remote = remote
        self.is_authenticated = False
        self.opened_at = guard.clock()
        self._inbox = bytearray()
        self._message_started: float | None = None
        super().__init__(**kwargs)

    # ---------------------------------------------------------------- pysyncobj's interface

    def connect(self, host: str, port: int) -> bool:
        self._inbox = bytearray()
        self._message_started = None
        self.is_authenticated = False
        self.opened_at = self.guard.clock()
        self.guard.watch(self)
        return bool(super().connect(host, port))

    def disconnect(self) -> None:
        self._inbox = bytearray()
        self._message_started = None
        self.guard.forget(self)
        super().disconnect()

    def _TcpConnection__tryReadBuffer(self) -> None:
        sock = self._TcpConnection__socket
        size = self._TcpConnection__recvBufferSize
        budget = (AUTHENTICATED_READ_BUDGET if self.is_authenticated
                  else UNAUTHENTICATED_MAX_MESSAGE_BYTES + _LENGTH.size)
        inbox = self._inbox
        read = 0
        while read < budget:
            try:
                chunk = sock.recv(size)
            except OSError as error:
                if error.errno not in _RETRY:
                    self.disconnect()
                    return
                break
            if not chunk:
                self.disconnect()
                return
            if not inbox:
                self._message_started = self.guard.clock()
            inbox += chunk
            read += len(chunk)
            if len(inbox) >= _LENGTH.size and not self._length_allowed():
                return
            if len(chunk) < size:
                break  # drained for now: the level-triggered poll says when there is more
        # pysyncobj's own idle timeout compares this with its clock (CLOCK_MONOTONIC_RAW), not
        # the guard's.
        self._TcpConnection__lastReadTime = raft_clock()

    def _TcpConnection__processParseMessage(self) -> Any:
        inbox = self._inbox
        if len(inbox) < _LENGTH.size or not self._length_allowed():
            return None
        (length,) = _LENGTH.unpack_from(inbox)
        end = _LENGTH.size + length
        if len(inbox) < end:
            return None
        data = bytes(inbox[_LENGTH.size:end])
        del inbox[:end]
        self._message_started = self.guard.clock() if inbox else None
        keyed = bool(self.recvRandKey)
        try:
            # pysyncobj's own checks, in its order; only the failure handling differs.
            if self.encryptor:
                timestamp = self.encryptor.extract_timestamp(data)
                if timestamp < self.recvLastTimestamp:
                    raise ValueError("a timestamp older than the previous message's")
                self.recvLastTimestamp = timestamp
                data = self.encryptor.decrypt(data)
            message = _pickle.loads(zlib.decompress(data))
            if self.recvRandKey:
                rand_key, message = message
                if rand_key != self.recvRandKey:
                    raise ValueError("the message does not carry this connection's key")
        except Exception as error:
            self.reject("undecryptable", f"a {length}-byte message failed: "
                        f"{type(error).__name__}")
            return None
        if not self.is_authenticated and (keyed or not self.encryptor):
            self.is_authenticated = True
            self.guard.authenticated(self)
        return message

    # ---------------------------------------------------------------- the guard

    def _length_allowed(self) -> bool:
        (length,) = _LENGTH.unpack_from(self._inbox)
        limit = self.message_limit()
        if 0 <= length <= limit:
            return True
        self.reject("oversize", f"announced a {length}-byte message, more than the "
                    f"{limit} allowed {'after' if self.is_authenticated else 'before'} "
                    "authentication")
        return False

    def message_limit(self) -> int:
        """The largest message this connection may announce now."""
        if self.is_authenticated:
            return self.guard.limits.max_message_bytes
        return UNAUTHENTICATED_MAX_MESSAGE_BYTES

    def check_deadlines(self, now: float) -> None:
        """Closes the connection if it has not authenticated within the handshake timeout, or
        a message has been incomplete for longer than the message timeout."""
        if self.state == CONNECTION_STATE.DISCONNECTED:
            self.guard.forget(self)
            return
        limits = self.guard.limits
        if not self.is_authenticated and now - self.opened_at > limits.handshake_timeout:
            self.reject("handshake_timeout", f"not authenticated after {limits.handshake_timeout}"
                        f" s ({len(self._inbox)} bytes pending)")
        elif (self._message_started is not None
              and now - self._message_started > limits.message_timeout):
            self.reject("message_timeout", f"a message incomplete after {limits.message_timeout}"
                        f" s ({len(self._inbox)} bytes received)")

    def reject(self, reason: str, detail: str) -> None:
        """Counts, logs (rate-limited) and closes the connection."""
        self.guard.record(reason, self, detail)
        self.disconnect()


class _GuardedTcpServer(TcpServer):  # type: ignore[misc]
    """pysyncobj's TcpServer building guarded connections, admitted per remote address; keeps
    listening after transient accept errors (pysyncobj would unbind for good) and accepts a
    bounded number of connections per poll event from a longer backlog."""

    def __init__(self, guard: TransportGuard, *args: Any, **kwargs: Any) -> None:
        self.guard = guard
        super().__init__(*args, **kwargs)

    def bind(self) -> None:
        super().bind()
        # pysyncobj listens with a backlog of 5: a burst of junk connections would make a
        # reconnecting peer's SYN wait for a retransmission (1 s, more than an election).
        self._TcpServer__socket.listen(_LISTEN_BACKLOG)

    def _TcpServer__onNewConnection(self, descr: int, event: int) -> None:
        if event & POLL_EVENT_TYPE.READ:
            server = self._TcpServer__socket
            for _ in range(_ACCEPTS_PER_EVENT):
                try:
                    sock, address = server.accept()
                except OSError as error:
                    if error.errno in _RETRY:
                        break
                    if error.errno in _TRANSIENT_ACCEPT:
                        logger.warning("Raft transport: accept failed (%s); still listening",
                                       error)
                        break
                    self.unbind()
                    return
                self._admit(sock, str(address[0]))
        if event & POLL_EVENT_TYPE.ERROR:
            self.unbind()

    def _admit(self, sock: socket.socket, address: str) -> None:
        send_size, recv_size = self._TcpServer__sendBufferSize, self._TcpServer__recvBufferSize
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_size)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, recv_size)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
        except OSError:
            sock.close()  # reset before we saw it
            return
        conn = GuardedTcpConnection(
            self.guard, incoming=True, remote=address, poller=self._TcpServer__poller,
            socket=sock, timeout=self._TcpServer__connectionTimeout, sendBufferSize=send_size,
            recvBufferSize=recv_size, keepalive=self._TcpServer__keepalive)
        self.guard.admit(conn, address)
        self._TcpServer__onNewConnectionCallback(conn)


class GuardedTransport(TCPTransport):  # type: ignore[misc]
    """pysyncobj's TCPTransport whose every connection, incoming and outgoing, is guarded.

    Build it through :func:`guarded_transport`, passed as SyncObj's ``transportClass``.
    Used from pysyncobj's tick thread; :attr:`guard`'s counters may be read from any thread.
    """

    _server: Any  # pysyncobj's attribute, replaced in _createServer

    def __init__(self, syncObj: Any, selfNode: Any, otherNodes: Any,
                 limits: TransportLimits | None = None) -> None:
        # Before TCPTransport.__init__, which creates the server and the outgoing connections.
        self.guard = TransportGuard(limits or TransportLimits())
        super().__init__(syncObj, selfNode, otherNodes)

    def _createServer(self) -> None:
        super()._createServer()
        # Same address and options as pysyncobj chose; only the class differs.
        plain, conf = self._server, self._syncObj.conf
        self._server = _GuardedTcpServer(
            self.guard, self._syncObj._poller, plain._TcpServer__host, plain._TcpServer__port,
            onNewConnection=self._onNewIncomingConnection, sendBufferSize=conf.sendBufferSize,
            recvBufferSize=conf.recvBufferSize, connectionTimeout=conf.connectionTimeout)

    def addNode(self, node: Any) -> None:
        super().addNode(node)
        plain = self._connections.get(node)
        if plain is None or isinstance(plain, GuardedTcpConnection):
            return
        # pysyncobj made an outgoing connection (not yet connected): replace it, with the same
        # options and callbacks (TCPTransport.addNode).
        conf = self._syncObj.conf
        conn = GuardedTcpConnection(
            self.guard, incoming=False, remote=str(getattr(node, "address", node)),
            poller=self._syncObj._poller, timeout=conf.connectionTimeout,
            sendBufferSize=conf.sendBufferSize, recvBufferSize=conf.recvBufferSize,
            keepalive=conf.tcp_keepalive)
        conn.encryptor = self._syncObj.encryptor
        conn.setOnConnectedCallback(functools.partial(self._onOutgoingConnected, conn))
        conn.setOnMessageReceivedCallback(functools.partial(self._onMessageReceived, node))
        conn.setOnDisconnectedCallback(functools.partial(self._onDisconnected, conn))
        self._connections[node] = conn

    def _onTick(self) -> None:
        super()._onTick()
        self.guard.sweep()


def guarded_transport(limits: TransportLimits) -> Callable[..., GuardedTransport]:
    """SyncObj's ``transportClass`` for a node with these limits."""
    return functools.partial(GuardedTransport, limits=limits)
