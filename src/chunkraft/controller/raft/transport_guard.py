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

With a password, a connection also seals its messages with AES-256-GCM once the peer has said
it reads them, and reads both formats (``sealed_messages.py``: the offer, the rolling upgrade;
``peer_cipher.py``: the token). The password authenticates a sealed message as it does a Fernet
one, and the handshake (random keys) is pysyncobj's, in its format, in both cases.

Everything is hooked through pysyncobj's ``transportClass`` argument: subclasses of its
``TCPTransport``, ``TcpServer`` and ``TcpConnection``, overriding the connection's private read
and parse methods and its send (checked at import: a pysyncobj that renamed them fails loudly here).
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
from typing import Any

import pysyncobj.pickle as _pickle
from pysyncobj.poller import POLL_EVENT_TYPE
from pysyncobj.tcp_connection import CONNECTION_STATE, TcpConnection
from pysyncobj.tcp_server import TcpServer
from pysyncobj.transport import TCPTransport

from chunkraft.controller.raft.clock import raft_clock
from chunkraft.controller.raft.peer_cipher import PeerCipher, is_sealed
from chunkraft.controller.raft.sealed_messages import (
    SEALED_OFFER,
    is_offer,
    offers_our_version,
    open_message,
    peer_cipher_for,
    seal_message,
)
from chunkraft.controller.raft.transport_limits import (
    APPEND_ENTRIES_BATCH_BYTES,
    DEFAULT_MAX_MESSAGE_BYTES,
    LARGEST_LEGITIMATE_MESSAGE_BYTES,
    UNAUTHENTICATED_MAX_MESSAGE_BYTES,
    TransportLimits,
)

__all__ = [
    "APPEND_ENTRIES_BATCH_BYTES",
    "DEFAULT_MAX_MESSAGE_BYTES",
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
                      (TcpConnection, "_TcpConnection__trySendBuffer"),
                      (TcpServer, "_TcpServer__onNewConnection")):
    if not hasattr(_owner, _name):
        raise ImportError(f"pysyncobj changed: {_owner.__name__} has no {_name}; "
                          "review chunkraft.controller.raft.transport_guard")

AUTHENTICATED_READ_BUDGET = 4 * 1024 * 1024
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


_MESSAGE_COUNTS = ("sealed_sent", "fernet_sent", "sealed_received", "fernet_received",
                   "offer_sent", "offer_received")


class TransportGuard:
    """The state the guard keeps for one transport: live connections, unauthenticated incoming
    connections per remote address, counts of the connections it closed by reason and of the
    messages sent and received in each format, and the transport's :class:`PeerCipher` (None:
    nothing is sealed nor read sealed).

    Used only from pysyncobj's tick thread, except :meth:`closed_counts` and
    :meth:`message_counts`, which copy a dict (safe to call from any thread under the GIL).
    """

    def __init__(self, limits: TransportLimits,
                 clock: Callable[[], float] = time.monotonic,
                 cipher: PeerCipher | None = None) -> None:
        self.limits = limits
        self.clock = clock
        self.cipher = cipher
        self.messages = dict.fromkeys(_MESSAGE_COUNTS, 0)
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

    def message_counts(self) -> Mapping[str, int]:
        """Messages sent and received since start, by format (``sealed_sent``,
        ``fernet_sent``, ``sealed_received``, ``fernet_received``; Fernet includes the
        handshake's) and offers (``offer_sent``, ``offer_received``, not counted as Fernet)."""
        return dict(self.messages)

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
    """pysyncobj's TcpConnection with bounded reads, sealing its messages once the peer reads
    them (see the module doc).

    Replaces the connection's read loop and message parser, and seals in ``send`` once
    :attr:`peer_reads_sealed`; connecting, the handshake and the callbacks are pysyncobj's.
    Used only from pysyncobj's tick thread.
    """

    recvLastTimestamp: int  # pysyncobj's attributes this class assigns
    peer_reads_sealed: bool
    _offered: bool
    _sealed_timestamp: int

    def __init__(self, guard: TransportGuard, *, incoming: bool, remote: str | None,
                 **kwargs: Any) -> None:
        self.guard = guard
        self.incoming = incoming
        self.remote = remote
        self.is_authenticated = False
        self.opened_at = guard.clock()
        self._inbox = bytearray()
        self._message_started: float | None = None
        self._reset_sealing()
        super().__init__(**kwargs)
        if not hasattr(self, "_TcpConnection__writeBuffer"):
            raise ImportError("pysyncobj changed: TcpConnection has no __writeBuffer; review "
                              "chunkraft.controller.raft.transport_guard")

    # ---------------------------------------------------------------- pysyncobj's interface

    def connect(self, host: str, port: int) -> bool:
        self._inbox = bytearray()
        self._message_started = None
        self._reset_sealing()
        self.is_authenticated = False
        self.opened_at = self.guard.clock()
        self.guard.watch(self)
        return bool(super().connect(host, port))

    def disconnect(self) -> None:
        self._inbox = bytearray()
        self._message_started = None
        self._reset_sealing()  # a new connection negotiates again: the peer may be another build
        self.guard.forget(self)
        super().disconnect()

    def send(self, message: Any) -> None:
        cipher = self.guard.cipher
        if cipher is not None and self.peer_reads_sealed and self.sendRandKey:
            data = seal_message(cipher, (self.sendRandKey, message))
            self._TcpConnection__writeBuffer += _LENGTH.pack(len(data)) + data
            self._TcpConnection__trySendBuffer()
            self.guard.messages["sealed_sent"] += 1
        else:
            super().send(message)
            self.guard.messages["fernet_sent"] += 1
        # The offer follows this side's first send on an authenticated connection, never the
        # handshake's first message (see sealed_messages.py for why); also when the peer's
        # offer came first and that send was already sealed, or the peer would never seal.
        if (cipher is not None and not self._offered and self.is_authenticated
                and self.sendRandKey and self.state != CONNECTION_STATE.DISCONNECTED):
            self._offered = True
            super().send(SEALED_OFFER)
            self.guard.messages["offer_sent"] += 1

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
        # An offer is swallowed and the next message parsed at once: returning None would
        # leave messages already buffered unread until the socket has more bytes.
        while True:
            message = self._parse_one()
            if message is None or not self._took_offer(message):
                return message

    def _parse_one(self) -> Any:
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
        cipher = self.guard.cipher
        # Both formats on every connection: the first byte tells them apart (peer_cipher.py).
        sealed = cipher is not None and is_sealed(data)
        try:
            if cipher is not None and sealed:
                message = self._open_sealed(cipher, data, keyed)
            else:
                message = self._open_fernet(data)
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
        kind = ("offer_received" if is_offer(message)
                else "sealed_received" if sealed else "fernet_received")
        self.guard.messages[kind] += 1
        return message

    def _open_fernet(self, data: bytes) -> Any:
        # pysyncobj's own checks, in its order; only the failure handling differs.
        if self.encryptor:
            timestamp = self.encryptor.extract_timestamp(data)
            if timestamp < self.recvLastTimestamp:
                raise ValueError("a timestamp older than the previous message's")
            self.recvLastTimestamp = timestamp
            data = self.encryptor.decrypt(data)
        return _pickle.loads(zlib.decompress(data))

    def _open_sealed(self, cipher: PeerCipher, data: bytes, keyed: bool) -> Any:
        # The same checks as pysyncobj's on Fernet, the tag checked before the timestamp is
        # trusted; sealed messages are only ever sent after the handshake, so always keyed.
        if not keyed:
            raise ValueError("a sealed message before the handshake")
        timestamp, message = open_message(cipher, data)
        if timestamp < self._sealed_timestamp:
            raise ValueError("a timestamp older than the previous sealed message's")
        self._sealed_timestamp = timestamp
        return message

    # ---------------------------------------------------------------- sealing

    def _reset_sealing(self) -> None:
        self.peer_reads_sealed = False
        self._offered = False
        self._sealed_timestamp = 0

    def _took_offer(self, message: Any) -> bool:
        """Whether ``message`` was the peer's offer, taken here (and never handed on). Without
        a cipher this node is one of the older format, and an offer goes on to pysyncobj,
        which ignores it, as an older node does."""
        if self.guard.cipher is None or not self.is_authenticated or not is_offer(message):
            return False
        if offers_our_version(message):
            self.peer_reads_sealed = True
        return True

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
    """pysyncobj's TCPTransport whose every connection, incoming and outgoing, is guarded, and
    seals its messages to peers that read them when the cluster has a password.

    Build it through :func:`guarded_transport`, passed as SyncObj's ``transportClass``.
    Used from pysyncobj's tick thread; :attr:`guard`'s counters may be read from any thread.
    """

    _server: Any  # pysyncobj's attribute, replaced in _createServer

    def __init__(self, syncObj: Any, selfNode: Any, otherNodes: Any,
                 limits: TransportLimits | None = None) -> None:
        # Before TCPTransport.__init__, which creates the server and the outgoing connections.
        limits = limits or TransportLimits()
        # No password, no sealing: pysyncobj sends in the clear then, and so does this.
        cipher = peer_cipher_for(getattr(syncObj.conf, "password", None),
                                 limits.max_message_bytes)
        self.guard = TransportGuard(limits, cipher=cipher)
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
