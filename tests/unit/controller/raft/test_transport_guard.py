"""transport_guard: a guarded pysyncobj server against junk, floods, idlers and dribblers, and
sealed messages between peers of this version and of the older format.

Real sockets on 127.0.0.1 and pysyncobj's own poller, driven by hand from the test thread (no
Raft): the server side is exactly what a RaftNode's transport builds for incoming connections,
and a peer's outgoing connection does pysyncobj's outgoing handshake.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pysyncobj.pickle as pysyncobj_pickle
import pytest
from pysyncobj.encryptor import getEncryptor
from pysyncobj.poller import createPoller
from pysyncobj.tcp_connection import CONNECTION_STATE, TcpConnection

from chunkraft.controller.raft.peer_cipher import PeerCipher, is_sealed
from chunkraft.controller.raft.sealed_messages import SEALED_OFFER, seal_message
from chunkraft.controller.raft.transport_guard import (
    LARGEST_LEGITIMATE_MESSAGE_BYTES,
    STALL,
    SWEEP_PERIOD,
    UNAUTHENTICATED_MAX_MESSAGE_BYTES,
    GuardedTcpConnection,
    TransportGuard,
    TransportLimits,
    _GuardedTcpServer,
)
from chunkraft.controller.settings import setting_named
from chunkraft.local.local_cluster import free_ports

PASSWORD = "guard-test"
ENCRYPTOR = getEncryptor(PASSWORD)
KEY = b"k" * 32
STEP = 0.005


class Clock:
    """A clock the test moves; the guard's deadlines read it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Server:
    """A guarded server and the connections it accepted, each with the messages it got."""

    def __init__(self, limits: TransportLimits, clock: Callable[[], float] = time.monotonic,
                 cipher: PeerCipher | None = None, answer_handshake: bool = False) -> None:
        self.poller = createPoller("auto")
        self.guard = TransportGuard(limits, clock, cipher)
        self.answer_handshake = answer_handshake
        self.port = free_ports(1)[0]
        self.accepted: list[GuardedTcpConnection] = []
        self.received: list[tuple[GuardedTcpConnection, Any, float]] = []
        self.rejected_inbox: list[int] = []
        self.server = _GuardedTcpServer(
            self.guard, self.poller, "127.0.0.1", self.port, onNewConnection=self._accepted,
            sendBufferSize=2 ** 16, recvBufferSize=2 ** 16, connectionTimeout=60.0)
        self.server.bind()

    def _accepted(self, conn: GuardedTcpConnection) -> None:
        conn.encryptor = ENCRYPTOR
        self.accepted.append(conn)
        conn.setOnMessageReceivedCallback(lambda message: self._received(conn, message))

    def _received(self, conn: GuardedTcpConnection, message: Any) -> None:
        if not conn.recvRandKey:  # the handshake, as pysyncobj's transport does it
            conn.sendRandKey = message
            conn.recvRandKey = KEY
            if self.answer_handshake:
                conn.send(KEY)
                return
        self.received.append((conn, message, time.monotonic()))

    def pump(self, seconds: float) -> None:
        """Polls for about ``seconds`` (bounded in iterations too)."""
        deadline = time.monotonic() + seconds
        for _ in range(int(seconds / STEP) + 1):
            self.poller.poll(STEP)
            self.guard.sweep()
            if time.monotonic() >= deadline:
                break

    def advance(self, clock: Clock, seconds: float) -> None:
        """Moves ``clock`` by ``seconds`` in steps of a sweep period, polling at each step
        (steps, not one jump: a jump of more than STALL reads as a stalled Raft thread)."""
        for _ in range(round(seconds / SWEEP_PERIOD)):
            clock.now += SWEEP_PERIOD
            self.poller.poll(0)
            self.guard.sweep()

    def pump_until(self, condition: Callable[[], bool], seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        for _ in range(int(seconds / STEP) + 1):
            if condition():
                return True
            self.poller.poll(STEP)
            self.guard.sweep()
            if time.monotonic() >= deadline:
                break
        return condition()

    def open(self) -> list[GuardedTcpConnection]:
        return [c for c in self.accepted if c.state != CONNECTION_STATE.DISCONNECTED]

    def close(self) -> None:
        for conn in self.accepted:
            conn.disconnect()
        self.server.unbind()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    limits = getattr(request, "param", TransportLimits())
    built = Server(limits)
    yield built
    built.close()


def frame(message: Any, key: bytes | None = None) -> bytes:
    """A message as pysyncobj's TcpConnection.send frames it (password set)."""
    if key is not None:
        message = (key, message)
    data: bytes = ENCRYPTOR.encrypt_at_time(zlib.compress(pysyncobj_pickle.dumps(message), 3),
                                     int(time.monotonic()))
    return struct.pack("i", len(data)) + data


def client(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.setblocking(False)
    return sock


def send_some(sock: socket.socket, data: memoryview) -> memoryview:
    """Sends what the socket takes now; returns the rest (empty once the peer closed)."""
    try:
        sent = sock.send(data)
    except BlockingIOError:
        return data
    except OSError:
        return data[:0]
    return data[sent:]


def peer_closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(65536) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_the_limits_leave_room_for_the_largest_legitimate_message() -> None:
    # 4/3 (Fernet's base64) of two full batches of incompressible commands, plus zlib's and
    # the framing's few bytes: what RaftNode's settings can produce at worst.
    assert LARGEST_LEGITIMATE_MESSAGE_BYTES >= 4 / 3 * (2 * 64 * 2 ** 20) * 1.001 + 200
    assert TransportLimits().max_message_bytes > LARGEST_LEGITIMATE_MESSAGE_BYTES
    setting = setting_named("raft.max.message.bytes")
    assert setting is not None and setting.minimum == LARGEST_LEGITIMATE_MESSAGE_BYTES
    handshake = len(frame(os.urandom(32))), len(frame("127.0.0.1:65535", KEY))
    assert max(handshake) * 100 < UNAUTHENTICATED_MAX_MESSAGE_BYTES, handshake
    with pytest.raises(ValueError):
        TransportLimits(max_connections_per_address=0)


def test_a_huge_announced_length_closes_the_connection_before_buffering(
        server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    reject = GuardedTcpConnection.reject

    def recording(conn: GuardedTcpConnection, reason: str, detail: str) -> None:
        seen.append(len(conn._inbox))
        reject(conn, reason, detail)

    monkeypatch.setattr(GuardedTcpConnection, "reject", recording)
    attacker = client(server.port)
    junk = memoryview(struct.pack("i", 0x7FFFFFFF) + bytes(16 * 2 ** 20))
    started = time.monotonic()
    for _ in range(2000):
        junk = send_some(attacker, junk)
        server.pump(STEP)
        if server.guard.closed_counts().get("oversize") or not junk:
            break
    assert server.guard.closed_counts() == {"oversize": 1}
    assert time.monotonic() - started < 2.0
    # At most one read (64 KiB) was ever held, not the 16 MiB that followed.
    assert seen and max(seen) <= 2 ** 16 + 4, seen
    assert server.pump_until(lambda: not server.open(), 1.0)
    assert server.pump_until(lambda: peer_closed(attacker), 1.0)
    attacker.close()


def test_a_negative_length_and_an_oversized_handshake_are_refused(server: Server) -> None:
    negative = client(server.port)
    negative.sendall(struct.pack("i", -5) + b"x" * 10)
    oversized = client(server.port)
    oversized.sendall(struct.pack("i", UNAUTHENTICATED_MAX_MESSAGE_BYTES + 1))
    assert server.pump_until(lambda: server.guard.closed_counts().get("oversize") == 2, 2.0)
    negative.close()
    oversized.close()


def test_a_message_that_does_not_decrypt_closes_the_connection(server: Server) -> None:
    forger = client(server.port)
    forger.sendall(struct.pack("i", 1000) + os.urandom(1000))
    replayer = client(server.port)
    replayer.sendall(frame(os.urandom(32)) + frame("127.0.0.1:1", b"not-the-key" * 3))
    assert server.pump_until(
        lambda: server.guard.closed_counts().get("undecryptable") == 2, 2.0)
    assert len(server.received) == 1  # the replayer's first message decrypts; its second fails
    assert not server.received[0][0].is_authenticated
    forger.close()
    replayer.close()


def test_a_handshake_authenticates_and_lifts_the_limit(server: Server) -> None:
    peer = client(server.port)
    peer.sendall(frame(os.urandom(32)))
    assert server.pump_until(lambda: len(server.received) == 1, 2.0)
    conn = server.received[0][0]
    assert not conn.is_authenticated
    assert conn.message_limit() == UNAUTHENTICATED_MAX_MESSAGE_BYTES
    large = os.urandom(2 * UNAUTHENTICATED_MAX_MESSAGE_BYTES)
    rest = memoryview(frame("127.0.0.1:1", KEY) + frame({"entries": large}, KEY))
    for _ in range(1000):
        rest = send_some(peer, rest)
        server.pump(STEP)
        if len(server.received) == 3:
            break
    assert [m for _, m, _ in server.received[1:]] == ["127.0.0.1:1", {"entries": large}]
    assert conn.is_authenticated and conn.message_limit() == TransportLimits().max_message_bytes
    assert server.guard.unauthenticated("127.0.0.1") == 0
    assert server.guard.closed_counts() == {}
    peer.close()


def test_junk_connections_do_not_delay_a_real_message(server: Server) -> None:
    peer = client(server.port)
    peer.sendall(frame(os.urandom(32)) + frame("127.0.0.1:1", KEY))
    assert server.pump_until(lambda: len(server.received) == 2, 2.0)
    idlers = [client(server.port) for _ in range(30)]
    # Opened last, so the per-address bound (8) evicts idlers, not these.
    flooders = [client(server.port) for _ in range(4)]
    floods = [memoryview(struct.pack("i", 0x7FFFFFFF) + bytes(16 * 2 ** 20))
              for _ in flooders]
    assert server.pump_until(lambda: len(server.accepted) == 35, 2.0)
    for index, sock in enumerate(flooders):
        floods[index] = send_some(sock, floods[index])
    sent = time.monotonic()
    peer.sendall(frame("append_entries", KEY))
    for _ in range(400):
        for index, sock in enumerate(flooders):
            floods[index] = send_some(sock, floods[index])
        server.pump(STEP)
        if len(server.received) == 3:
            break
    assert len(server.received) == 3
    conn, message, at = server.received[2]
    assert message == "append_entries" and conn.is_authenticated
    assert at - sent < 0.25, at - sent
    assert server.pump_until(lambda: server.guard.closed_counts().get("oversize") == 4, 2.0)
    assert server.guard.closed_counts() == {"oversize": 4, "per_address": 26}
    for sock in (peer, *flooders, *idlers):
        sock.close()


@pytest.mark.parametrize("server", [TransportLimits(max_connections_per_address=3)],
                         indirect=True)
def test_unauthenticated_connections_per_address_are_bounded(server: Server) -> None:
    idlers = [client(server.port) for _ in range(10)]
    assert server.pump_until(lambda: len(server.accepted) == 10, 3.0)
    assert server.guard.unauthenticated("127.0.0.1") == 3
    assert server.guard.closed_counts() == {"per_address": 7}
    # The oldest were evicted: the three newest remain.
    assert server.open() == server.accepted[-3:]
    # An authenticated connection no longer counts: a peer can always get in.
    peer = client(server.port)
    peer.sendall(frame(os.urandom(32)) + frame("127.0.0.1:1", KEY))
    assert server.pump_until(lambda: len(server.received) == 2, 2.0)
    assert server.received[-1][0].is_authenticated
    assert server.guard.unauthenticated("127.0.0.1") == 2
    for sock in (peer, *idlers):
        sock.close()


def test_idle_and_dribbling_connections_are_closed_at_their_deadline() -> None:
    clock = Clock()
    server = Server(TransportLimits(handshake_timeout=5.0, message_timeout=30.0), clock)
    try:
        idle = client(server.port)
        dribbler = client(server.port)
        message = frame(os.urandom(32))
        assert server.pump_until(lambda: len(server.accepted) == 2, 2.0)
        for step in range(4):  # one byte per "second": alive, but never done
            dribbler.send(message[step:step + 1])
            server.pump(0.02)
            server.advance(clock, 1.0)
        assert len(server.open()) == 2 and server.guard.closed_counts() == {}
        server.advance(clock, 1.2)
        assert server.guard.closed_counts() == {"handshake_timeout": 2}
        assert server.open() == []
        # An authenticated connection that stops halfway through a message.
        peer = client(server.port)
        peer.sendall(frame(os.urandom(32)) + frame("127.0.0.1:1", KEY))
        assert server.pump_until(lambda: len(server.received) == 2, 2.0)
        partial = frame(os.urandom(4000), KEY)[:500]
        assert len(partial) == 500
        peer.sendall(partial)
        server.pump(0.05)
        server.advance(clock, 29.0)
        assert len(server.open()) == 1
        server.advance(clock, 1.2)
        assert server.guard.closed_counts()["message_timeout"] == 1
        assert server.open() == []
        for sock in (idle, dribbler, peer):
            sock.close()
    finally:
        server.close()


def test_a_stalled_raft_thread_reads_what_arrived_before_judging_deadlines() -> None:
    clock = Clock()
    server = Server(TransportLimits(handshake_timeout=5.0), clock)
    try:
        peer = client(server.port)
        assert server.pump_until(lambda: len(server.accepted) == 1, 2.0)
        server.advance(clock, 1.0)
        # The Raft thread is held up for 10 s (no polls, no sweeps); the peer's handshake
        # arrives meanwhile and waits in the socket.
        peer.sendall(frame(os.urandom(32)) + frame("127.0.0.1:1", KEY))
        clock.now += 10.0
        assert STALL < 10.0
        server.pump(0.05)  # the first sweep after the stall judges nothing; the poll reads
        assert server.accepted[0].is_authenticated
        assert server.guard.closed_counts() == {}
        peer.close()
    finally:
        server.close()



# ---------------------------------------------------------------- sealed messages

CIPHER = PeerCipher(PASSWORD, max_token_bytes=TransportLimits().max_message_bytes)
ADDRESS = "127.0.0.1:1"


class Peer:
    """An outgoing connection to a server, with pysyncobj's outgoing handshake
    (``TCPTransport._onOutgoingConnected`` / ``_onOutgoingMessageReceived``): its random key,
    then, once the server's key is in, its address. ``guarded=False`` is pysyncobj's own
    TcpConnection, as a node of the older format has."""

    def __init__(self, server: Server, *, guarded: bool, cipher: PeerCipher | None) -> None:
        options: dict[str, Any] = {"poller": server.poller, "timeout": 60.0,
                                   "sendBufferSize": 2 ** 16, "recvBufferSize": 2 ** 16}
        self.guard = TransportGuard(TransportLimits(), cipher=cipher)
        self.conn: Any = (GuardedTcpConnection(self.guard, incoming=False, remote=ADDRESS,
                                               **options)
                          if guarded else TcpConnection(**options))
        self.conn.encryptor = ENCRYPTOR
        self.received: list[Any] = []
        self.conn.setOnConnectedCallback(self._connected)
        self.conn.setOnMessageReceivedCallback(self._received)
        assert self.conn.connect("127.0.0.1", server.port)

    def _connected(self) -> None:
        self.conn.recvRandKey = os.urandom(32)
        self.conn.send(self.conn.recvRandKey)

    def _received(self, message: Any) -> None:
        if not self.conn.sendRandKey:
            self.conn.sendRandKey = message
            self.conn.send(ADDRESS)
            return
        self.received.append(message)

    def connected(self) -> bool:
        return bool(self.conn.state == CONNECTION_STATE.CONNECTED)


@contextlib.contextmanager
def handshake(cipher: PeerCipher | None, *, server_cipher: PeerCipher | None,
              guarded_peer: bool = True) -> Iterator[tuple[Server, Peer, GuardedTcpConnection]]:
    """A server and a peer through pysyncobj's handshake; both closed when the block ends."""
    server = Server(TransportLimits(), cipher=server_cipher, answer_handshake=True)
    peer: Peer | None = None
    try:
        peer = Peer(server, guarded=guarded_peer, cipher=cipher)
        assert server.pump_until(lambda: bool(server.received) and peer.conn.sendRandKey, 2.0)
        conn, message, _ = server.received[0]
        assert message == ADDRESS and conn.is_authenticated
        yield server, peer, conn
    finally:
        if peer is not None:
            peer.conn.disconnect()
        server.close()


def heartbeat(n: int) -> dict[str, Any]:
    return {"type": "append_entries", "term": 3, "commit_index": n}


def test_peers_offer_once_then_seal_every_message_both_ways() -> None:
    with handshake(CIPHER, server_cipher=CIPHER) as (server, peer, conn):
        # The peer sent its address, then its offer, which the server took (never handed on).
        assert server.pump_until(lambda: conn.peer_reads_sealed, 2.0)
        assert [m for _, m, _ in server.received] == [ADDRESS]
        # The server's first authenticated send is sealed already; its offer follows it.
        for n in range(5):
            conn.send(heartbeat(n))
        assert server.pump_until(lambda: len(peer.received) == 5, 2.0)
        assert peer.received == [heartbeat(n) for n in range(5)]
        assert peer.conn.peer_reads_sealed
        for n in range(5, 10):
            peer.conn.send(heartbeat(n))
        assert server.pump_until(lambda: len(server.received) == 6, 2.0)
        assert [m for _, m, _ in server.received[1:]] == [heartbeat(n) for n in range(5, 10)]
        # Handshake: peer key + address (Fernet); server key (Fernet). Then only sealed.
        assert server.guard.message_counts() == {
            "sealed_sent": 5, "fernet_sent": 1, "sealed_received": 5, "fernet_received": 2,
            "offer_sent": 1, "offer_received": 1}
        assert peer.guard.message_counts() == {
            "sealed_sent": 5, "fernet_sent": 2, "sealed_received": 5, "fernet_received": 1,
            "offer_sent": 1, "offer_received": 1}
        assert server.guard.closed_counts() == {} and peer.connected()
        # On the wire: what the peer sends now is a sealed token after pysyncobj's prefix.
        frames: list[bytes] = []
        peer.conn._TcpConnection__trySendBuffer = lambda: frames.append(
            bytes(peer.conn._TcpConnection__writeBuffer))
        peer.conn.send(heartbeat(99))
        assert frames and is_sealed(frames[-1][4:])
        assert struct.unpack_from("i", frames[-1])[0] == len(frames[-1]) - 4


def test_a_reconnected_peer_negotiates_again() -> None:
    with handshake(CIPHER, server_cipher=CIPHER) as (server, peer, conn):
        assert server.pump_until(lambda: conn.peer_reads_sealed, 2.0)
        conn.send(heartbeat(0))
        assert server.pump_until(lambda: peer.conn.peer_reads_sealed, 2.0)
        peer.conn.disconnect()
        assert not peer.conn.peer_reads_sealed  # the next connection may reach another build
        assert peer.conn.connect("127.0.0.1", server.port)
        assert server.pump_until(lambda: len(server.received) == 2, 2.0)
        again = server.received[1][0]
        assert again is not conn and server.received[1][1] == ADDRESS
        assert server.pump_until(lambda: again.peer_reads_sealed, 2.0)
        peer.conn.send(heartbeat(1))  # Fernet: the server has not offered on this connection
        again.send(heartbeat(2))
        assert server.pump_until(lambda: peer.conn.peer_reads_sealed, 2.0)
        peer.conn.send(heartbeat(3))
        assert server.pump_until(lambda: len(server.received) == 4, 2.0)
        assert peer.guard.message_counts()["offer_sent"] == 2
        assert peer.guard.message_counts()["sealed_sent"] == 1
        assert [m for _, m, _ in server.received[2:]] == [heartbeat(1), heartbeat(3)]


def test_a_peer_of_the_older_format_gets_fernet_and_is_read() -> None:
    # pysyncobj's own connection, no chunkraft at all: it disconnects on any message it cannot
    # decrypt, so staying connected means every message it got was Fernet.
    with handshake(None, server_cipher=CIPHER, guarded_peer=False) as (server, old, conn):
        server.pump(0.05)
        # The handshake's key was the server's only message so far: no offer in the exchange
        # itself (pysyncobj's admin utility would take it for its command's answer).
        assert old.received == []
        for n in range(4):
            conn.send(heartbeat(n))
        assert server.pump_until(lambda: len(old.received) == 5, 2.0)
        # The offer reaches the old node's handler, which ignores a message type it does not
        # know (pysyncobj's SyncObj.__onMessageReceived matches none of its types).
        assert old.received == [heartbeat(0), dict(SEALED_OFFER), *map(heartbeat, range(1, 4))]
        old.conn.send(heartbeat(7))
        assert server.pump_until(lambda: len(server.received) == 2, 2.0)
        assert server.received[-1][1] == heartbeat(7)
        assert not conn.peer_reads_sealed and old.connected()
        counts = server.guard.message_counts()
        assert counts["sealed_sent"] == 0 and counts["fernet_sent"] == 5
        assert counts["offer_sent"] == 1 and counts["offer_received"] == 0


def test_a_node_without_a_cipher_never_offers_and_is_never_sealed_to() -> None:
    # The server plays a node of the older format (PeerCipher disabled); the peer is this one.
    with handshake(CIPHER, server_cipher=None) as (server, peer, conn):
        # The peer's offer went on to the handler, as on an older node.
        assert server.pump_until(lambda: len(server.received) == 2, 2.0)
        assert server.received[1][1] == dict(SEALED_OFFER)
        for n in range(3):
            conn.send(heartbeat(n))
        assert server.pump_until(lambda: len(peer.received) == 3, 2.0)
        for n in range(3, 6):
            peer.conn.send(heartbeat(n))
        assert server.pump_until(lambda: len(server.received) == 5, 2.0)
        assert [m for _, m, _ in server.received[2:]] == [heartbeat(n) for n in range(3, 6)]
        assert not peer.conn.peer_reads_sealed
        assert peer.guard.message_counts()["sealed_sent"] == 0
        assert server.guard.message_counts()["offer_sent"] == 0
        assert server.guard.closed_counts() == {}


def test_a_sealed_message_under_another_password_closes_the_connection() -> None:
    with handshake(CIPHER, server_cipher=CIPHER) as (server, peer, conn):
        assert server.pump_until(lambda: conn.peer_reads_sealed, 2.0)
        forged = seal_message(PeerCipher("another", max_token_bytes=2 ** 20),
                              (peer.conn.sendRandKey, heartbeat(1)))
        peer.conn._TcpConnection__socket.sendall(struct.pack("i", len(forged)) + forged)
        assert server.pump_until(
            lambda: server.guard.closed_counts().get("undecryptable") == 1, 2.0)
        assert [m for _, m, _ in server.received] == [ADDRESS]
