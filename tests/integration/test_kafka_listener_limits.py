"""The Kafka listener's limits on real processes (docs/kafka-protocol.md, "Limits"): a
controller's and a broker's Kafka port under oversize, malformed, unauthenticated, silent, slow
and too many connections, all through raw sockets.

One module cluster: 3 controllers and 1 broker, every node with small limits
(:data:`LIMITS`). Each case is run against the leader controller's Kafka port and the broker's.
What must hold, per case:

- a frame size over ``socket.request.max.bytes`` (2^31-1, the limit + 1, a negative one) is
  closed at once, before any body byte is sent; a frame of exactly the limit is served;
- junk, a malformed header, an unknown API key, an unsupported Metadata version: that
  connection only is closed, with a log line naming why; another open, authenticated
  connection goes on being served;
- ApiVersions v99 answers UNSUPPORTED_VERSION (35) at v0 (response header v0) with the keys;
- before authentication only ApiVersions and SASL: Metadata closes the connection; a wrong
  password answers SASL_AUTHENTICATION_FAILED (58), then closes; an unknown mechanism answers
  UNSUPPORTED_SASL_MECHANISM (33);
- deadlines: not authenticated within ``sasl.handshake.timeout.ms`` (silent, or chatting
  ApiVersions all along) is closed after at least the deadline and well before 3x it; an
  authenticated connection that sends nothing for ``connections.max.idle.ms`` is closed, one
  that keeps asking is not; a frame trickled a byte at a time is cut when its deadline passes
  (the frame deadline is min(30 s, the connection's own deadline): see
  ``chunkraft.kafka.server.connection``; the 30 s itself has no setting);
- ``max.connections.per.ip``: the extra connections are closed at once, before they are read;
  once some close, new ones are served again;
- after every case a well-behaved client (ApiVersions, SASL/PLAIN, Metadata on a new
  connection) is served, no broker is fenced, and the quorum keeps its leader (the guard of
  ``tests/conftest.py``).

Every socket has a timeout, every loop a bound in count and in time.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from chunkraft.kafka.codec.messages import (
    api_specs,
    decode,
    decoder,
    encode,
    request_header_version,
    response_header_version,
)
from chunkraft.local.local_cluster import LocalCluster
from tests.integration.conftest import log_tail
from tests.support.brokers import broker_cluster, wait_until

MAX_FRAME = 65_536
PER_IP = 20
SASL_S = 2.0
IDLE_S = 5.0
LIMITS = {
    "socket.request.max.bytes": str(MAX_FRAME),
    "max.connections.per.ip": str(PER_IP),
    "sasl.handshake.timeout.ms": str(int(SASL_S * 1000)),
    "connections.max.idle.ms": str(int(IDLE_S * 1000)),
}
AT_ONCE_S = 1.0
"""A refusal (oversize frame, a connection over the count) closes within this."""
ANSWER_S = 5.0
"""The socket timeout of every request a well-behaved client sends."""
FENCED_LINE = "fenced: no heartbeat"

API_VERSIONS, METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 3, 17, 36
UNSUPPORTED_VERSION, UNSUPPORTED_SASL_MECHANISM, SASL_AUTHENTICATION_FAILED = 35, 33, 58


# ------------------------------------------------------------------ a raw Kafka client


def request_frame(api_key: int, version: int, body: dict[str, Any], correlation_id: int = 1,
                  client_id: str | None = "limits-test") -> bytes:
    """A whole request frame: the size, RequestHeader (v1 or v2, as the API's version says)
    and the body, encoded by chunkraft's codec."""
    header = encode("RequestHeader", request_header_version(api_key, version), {
        "request_api_key": api_key, "request_api_version": version,
        "correlation_id": correlation_id, "client_id": client_id})
    payload = header + encode(api_specs()[api_key].request.name, version, body)
    return struct.pack(">i", len(payload)) + payload


class KafkaSocket:
    """One raw connection to a Kafka port; every read and write bounded by ``timeout``."""

    def __init__(self, port: int, timeout: float = ANSWER_S) -> None:
        self.port = port
        self.timeout = timeout
        self.opened = time.monotonic()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read_exactly(self, size: int) -> bytes:
        data = bytearray()
        for _ in range(size + 1):
            if len(data) >= size:
                break
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError(f"closed after {len(data)} of {size} bytes")
            data += chunk
        return bytes(data)

    def call(self, api_key: int, version: int, body: dict[str, Any], *,
             answer_version: int | None = None) -> tuple[int, dict[str, Any]]:
        """Sends one request and reads its answer: (correlation id, body). ``answer_version``:
        the version the answer is read at (ApiVersions' UNSUPPORTED_VERSION answers at 0)."""
        self.correlation += 1
        self.send(request_frame(api_key, version, body, self.correlation))
        (size,) = struct.unpack(">i", self._read_exactly(4))
        assert 0 < size <= 16 << 20, f"an answer of {size} bytes"
        frame = self._read_exactly(size)
        read_at = version if answer_version is None else answer_version
        header, end = decoder("ResponseHeader", response_header_version(api_key, read_at))(
            frame, 0, len(frame))
        return header["correlation_id"], decode(api_specs()[api_key].response.name, read_at,
                                                frame, end)

    def authenticate(self, username: str, password: str) -> dict[str, Any]:
        """ApiVersions v3, SaslHandshake v1 PLAIN, SaslAuthenticate v2; the last answer."""
        _, versions = self.call(API_VERSIONS, 3, {"client_software_name": "limits-test",
                                                  "client_software_version": "1"})
        assert versions["error_code"] == 0, versions
        _, handshake = self.call(SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert handshake["error_code"] == 0, handshake
        _, answer = self.call(SASL_AUTHENTICATE, 2, {
            "auth_bytes": b"\x00" + username.encode() + b"\x00" + password.encode()})
        return answer

    def metadata(self) -> dict[str, Any]:
        _, answer = self.call(METADATA, 12, {"topics": None, "allow_auto_topic_creation": False,
                                             "include_topic_authorized_operations": False})
        return answer

    def closed_within(self, seconds: float) -> float | None:
        """Seconds (since this connection opened) at which the server closed it, waiting at
        most ``seconds`` from now; None if it is still open then. Any bytes the server sends
        meanwhile are read and dropped (at most 1 MiB). The socket's timeout is restored."""
        ends = time.monotonic() + seconds
        try:
            for _ in range(1024):
                left = ends - time.monotonic()
                if left <= 0:
                    return None
                self.sock.settimeout(left)
                try:
                    if not self.sock.recv(1024):
                        return time.monotonic() - self.opened
                except TimeoutError:
                    return None
                except (ConnectionResetError, BrokenPipeError):
                    return time.monotonic() - self.opened
        finally:
            self.sock.settimeout(self.timeout)
        raise AssertionError("the server sent over 1 MiB while we waited for a close")


@contextlib.contextmanager
def connect(port: int, timeout: float = ANSWER_S) -> Iterator[KafkaSocket]:
    connection = KafkaSocket(port, timeout)
    try:
        yield connection
    finally:
        connection.close()


# ------------------------------------------------------------------ the cluster


@dataclass(frozen=True)
class Node:
    """A Kafka port under test: its kind, port and the log its refusals are written to."""

    kind: str
    port: int
    log_path: Path


@pytest.fixture(scope="module")
def module_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with broker_cluster(tmp_path_factory.mktemp("kafka-limits"), properties=LIMITS,
                        broker_properties=LIMITS, brokers=1) as cluster:
        yield cluster


def _fenced_lines(cluster: LocalCluster) -> int:
    count = 0
    for node in cluster.nodes.values():
        with contextlib.suppress(OSError):
            count += node.log_path.read_bytes().count(FENCED_LINE.encode())
    return count


@pytest.fixture
def cluster(module_brokers: LocalCluster, request: pytest.FixtureRequest
            ) -> Iterator[LocalCluster]:
    """The module's cluster; afterwards no broker was fenced (no line logged, every broker
    unfenced). The leader is checked by the guard of tests/conftest.py."""
    fenced_before = _fenced_lines(module_brokers)
    yield module_brokers
    report = getattr(request.node, "report_call", None)
    if report is None or report.failed:
        for path in [*(n.log_path for n in module_brokers.nodes.values()),
                     *(b.log_path for b in module_brokers.broker_nodes.values())]:
            print(f"---- {path}:\n{log_tail(path)}")
    assert _fenced_lines(module_brokers) == fenced_before, "a broker was fenced"
    for broker_id in module_brokers.broker_nodes:
        status = module_brokers.broker_status(broker_id, timeout=5.0)
        assert status is not None and status.get("fenced") is False, (broker_id, status)


@pytest.fixture(params=["controller", "broker"])
def node(cluster: LocalCluster, request: pytest.FixtureRequest) -> Node:
    """The leader controller's Kafka port (the Raft thread most at risk) or the broker's."""
    if request.param == "controller":
        leader = cluster.wait_ready(timeout=30)
        process = cluster.nodes[leader]
        return Node("controller", process.kafka_port, process.log_path)
    broker = cluster.broker_nodes[0]
    return Node("broker", broker.kafka_port, broker.log_path)


def well_behaved(cluster: LocalCluster, node: Node) -> KafkaSocket:
    """A new connection, authenticated as the admin, whose Metadata names the brokers."""
    connection = KafkaSocket(node.port)
    try:
        answer = connection.authenticate("admin", cluster.admin_token)
        assert answer["error_code"] == 0, answer
        metadata = connection.metadata()
        assert [b["node_id"] for b in metadata["brokers"]] == list(cluster.broker_nodes), metadata
    except BaseException:
        connection.close()
        raise
    return connection


def assert_served(cluster: LocalCluster, node: Node) -> None:
    well_behaved(cluster, node).close()


def wait_logged(node: Node, text: str, timeout: float = 5.0) -> None:
    """Until ``node``'s log has a line containing ``text``."""
    wait_until(lambda: text.encode() in node.log_path.read_bytes(),
               f"{node.kind} log line {text!r}", timeout, 0.1)


def closed_at_once(connection: KafkaSocket, what: str) -> None:
    began = time.monotonic()
    closed = connection.closed_within(AT_ONCE_S + 2.0)
    waited = time.monotonic() - began
    assert closed is not None, f"{what}: still open after {waited:.2f} s"
    assert waited <= AT_ONCE_S, f"{what}: closed only after {waited:.2f} s"


# ------------------------------------------------------------------ frame sizes


@pytest.mark.parametrize("size", [2**31 - 1, MAX_FRAME + 1, -1],
                         ids=["2^31-1", "limit+1", "negative"])
def test_an_oversize_frame_is_closed_before_its_body(cluster: LocalCluster, node: Node,
                                                     size: int) -> None:
    with connect(node.port) as hostile:
        hostile.send(struct.pack(">i", size))  # the size only: no body byte is ever sent
        closed_at_once(hostile, f"a frame size of {size}")
    wait_logged(node, f"a frame of {size} bytes is over socket.request.max.bytes ({MAX_FRAME})")
    assert_served(cluster, node)


def test_a_frame_of_exactly_the_limit_is_served(cluster: LocalCluster, node: Node) -> None:
    with contextlib.closing(well_behaved(cluster, node)) as client:
        # Metadata v1 (all topics) padded to the limit: Kafka's brokers read past trailing
        # bytes of a body, and so does chunkraft (librdkafka sends some).
        frame = request_frame(METADATA, 1, {"topics": None}, correlation_id=99)
        padded = frame[4:] + bytes(MAX_FRAME - (len(frame) - 4))
        assert len(padded) == MAX_FRAME
        client.send(struct.pack(">i", len(padded)) + padded)
        (size,) = struct.unpack(">i", client._read_exactly(4))
        answer = client._read_exactly(size)
        assert struct.unpack(">i", answer[:4]) == (99,)
        assert client.metadata()["brokers"], "the connection is no longer served"


# ------------------------------------------------------------------ malformed frames

def _junk(length: int) -> bytes:
    return struct.pack(">i", length) + bytes((i * 37 + 11) % 256 for i in range(length))


JUNK = _junk(64)
MALFORMED: dict[str, tuple[bytes, str]] = {
    # junk: its client id's length (bytes 8-9) runs past the frame
    "junk": (JUNK, "a malformed request header: needs 13144 bytes"),
    "short-header": (struct.pack(">i", 6) + b"\x00\x03\x00\x0c\x00\x00",
                     "a malformed request header"),
    # ClientId claims 300 bytes, 2 follow
    "truncated-client-id": (struct.pack(">ihhih", 12, METADATA, 1, 7, 300) + b"ab",
                            "a malformed request header"),
    "unknown-api-key": (request_frame(API_VERSIONS, 0, {})[:4] + struct.pack(">h", 9999)
                        + request_frame(API_VERSIONS, 0, {})[6:],
                        "API key 9999 is not served here"),
    # a flexible version: header v2, its tagged fields (none) after the client id
    "metadata-v13": (struct.pack(">ihhihb", 11, METADATA, 13, 7, -1, 0),
                     "Metadata v13 is not supported"),
    "metadata-v99": (struct.pack(">ihhihb", 11, METADATA, 99, 7, -1, 0),
                     "Metadata v99 is not supported"),
    "metadata-body-truncated": (struct.pack(">ihhihi", 14, METADATA, 1, 7, -1, 5),
                                "a malformed Metadata v1"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_frame_closes_that_connection_only(cluster: LocalCluster, node: Node,
                                                       case: str) -> None:
    data, reason = MALFORMED[case]
    with contextlib.closing(well_behaved(cluster, node)) as bystander, \
            contextlib.closing(well_behaved(cluster, node)) as hostile:
        hostile.send(data)  # authenticated: the frame itself is what is refused
        closed_at_once(hostile, case)
        wait_logged(node, reason)
        assert bystander.metadata()["brokers"], "the other connection is no longer served"
    assert_served(cluster, node)


def test_api_versions_at_an_unsupported_version_answers_35_at_v0(cluster: LocalCluster,
                                                                  node: Node) -> None:
    with connect(node.port) as client:
        # v99 is flexible as every version from v3: header v2 (an empty tag section after
        # the client id), no body; the answer is at v0, with header v0 as ApiVersions' are.
        client.send(struct.pack(">ihhihb", 11, API_VERSIONS, 99, 42, -1, 0))
        (size,) = struct.unpack(">i", client._read_exactly(4))
        frame = client._read_exactly(size)
        assert struct.unpack(">i", frame[:4]) == (42,)
        answer = decode("ApiVersionsResponse", 0, frame, 4)
        assert answer["error_code"] == UNSUPPORTED_VERSION, answer
        keys = {key["api_key"]: (key["min_version"], key["max_version"])
                for key in answer["api_keys"]}
        assert {API_VERSIONS, METADATA, SASL_HANDSHAKE, SASL_AUTHENTICATE} <= set(keys), keys
        assert keys[SASL_AUTHENTICATE] == (0, 2) and keys[METADATA] == (0, 12), keys
        assert keys[API_VERSIONS] == (0, 4), keys
        # and the connection goes on: a supported version is answered on it
        _, again = client.call(API_VERSIONS, 3, {"client_software_name": "limits-test",
                                                 "client_software_version": "1"})
        assert again["error_code"] == 0, again


def test_api_versions_advertises_its_own_range(cluster: LocalCluster, node: Node) -> None:
    """ApiVersions 0-4: the advertised range is the range served, so a client
    never picks a version the server would not read."""
    with connect(node.port) as client:
        _, answer = client.call(API_VERSIONS, 3, {"client_software_name": "limits-test",
                                                  "client_software_version": "1"})
        ranges = {key["api_key"]: (key["min_version"], key["max_version"])
                  for key in answer["api_keys"]}
        assert ranges[API_VERSIONS] == (0, 4), ranges


# ------------------------------------------------------------------ authentication


def test_a_request_before_authentication_closes(cluster: LocalCluster, node: Node) -> None:
    with connect(node.port) as client:
        _, versions = client.call(API_VERSIONS, 3, {"client_software_name": "limits-test",
                                                    "client_software_version": "1"})
        assert versions["error_code"] == 0
        client.send(request_frame(METADATA, 12, {"topics": None}, 2))
        closed_at_once(client, "Metadata before authentication")
    wait_logged(node, "API key 3 before authentication")
    assert_served(cluster, node)


def test_a_wrong_password_answers_58_then_closes(cluster: LocalCluster, node: Node) -> None:
    with connect(node.port) as client:
        answer = client.authenticate("admin", "not-the-token")
        assert answer["error_code"] == SASL_AUTHENTICATION_FAILED, answer
        assert answer["error_message"], answer
        closed_at_once(client, "after SASL_AUTHENTICATION_FAILED")
    assert_served(cluster, node)


def test_an_unknown_sasl_mechanism_answers_33(cluster: LocalCluster, node: Node) -> None:
    with connect(node.port) as client:
        _, answer = client.call(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"})
        assert answer["error_code"] == UNSUPPORTED_SASL_MECHANISM, answer
        assert "PLAIN" in answer["mechanisms"], answer
        closed_at_once(client, "after UNSUPPORTED_SASL_MECHANISM")
    assert_served(cluster, node)


# ------------------------------------------------------------------ deadlines


EARLY = 0.01
"""Seconds a deadline may fire before its time as the client measures it (asyncio's timers
run up to the loop's clock resolution early)."""


@dataclass
class Timed:
    """One connection's case of the deadlines test, run on a thread of its own."""

    name: str
    behave: Callable[[KafkaSocket, float], float | None]
    """Does its part and returns when the server closed it (seconds since it opened)."""
    low: float
    high: float | None
    """The close must come within [low, high] seconds; high None: not at all in the wait."""
    closed: float | None = None
    error: BaseException | None = None


def _silent(connection: KafkaSocket, wait: float) -> float | None:
    return connection.closed_within(wait)


def _chatting(connection: KafkaSocket, wait: float) -> float | None:
    """ApiVersions every 0.4 s, never authenticating."""
    ends = time.monotonic() + wait
    for _ in range(100):
        if time.monotonic() >= ends:
            return None
        try:
            connection.call(API_VERSIONS, 3, {"client_software_name": "limits-test",
                                              "client_software_version": "1"})
        except (ConnectionError, struct.error):
            return time.monotonic() - connection.opened
        closed = connection.closed_within(0.4)
        if closed is not None:
            return closed
    return None


def _authenticated(then: Callable[[KafkaSocket, float], float | None], *,
                   token: Callable[[], str]) -> Callable[[KafkaSocket, float], float | None]:
    def behave(connection: KafkaSocket, wait: float) -> float | None:
        answer = connection.authenticate("admin", token())
        assert answer["error_code"] == 0, answer
        connection.opened = time.monotonic()  # the idle and frame clocks start here
        return then(connection, wait)
    return behave


def _asking(connection: KafkaSocket, wait: float) -> float | None:
    """Metadata every 1 s: never idle."""
    ends = time.monotonic() + wait
    for _ in range(100):
        if time.monotonic() >= ends:
            return None
        try:
            assert connection.metadata()["brokers"]
        except (ConnectionError, OSError):
            return time.monotonic() - connection.opened
        closed = connection.closed_within(1.0)
        if closed is not None:
            return closed
    return None


def _trickle(connection: KafkaSocket, wait: float) -> float | None:
    """Announces a 200-byte frame and sends one byte of it every 0.25 s: a byte keeps
    coming, but the frame never arrives whole in time."""
    connection.opened = time.monotonic()
    connection.send(struct.pack(">i", 200))
    ends = time.monotonic() + wait
    for _ in range(199):
        if time.monotonic() >= ends:
            return None
        try:
            connection.send(b"\x00")
        except (BrokenPipeError, ConnectionResetError):
            return time.monotonic() - connection.opened
        closed = connection.closed_within(0.25)
        if closed is not None:
            return closed
    return None  # never sends the last byte: a frame that would be whole is not the case


def test_deadlines(cluster: LocalCluster, node: Node) -> None:
    """All at once on their own connections (6 of the 20 allowed), one thread each."""
    token = lambda: cluster.admin_token  # noqa: E731
    cases = [
        Timed("silent, never authenticates", _silent, SASL_S, 3 * SASL_S),
        Timed("ApiVersions every 0.4 s, never authenticates", _chatting, SASL_S, 3 * SASL_S),
        Timed("trickles a frame, never authenticates", _trickle, SASL_S, 3 * SASL_S),
        Timed("authenticated, then idle", _authenticated(_silent, token=token), IDLE_S,
              3 * IDLE_S),
        Timed("authenticated, trickles a frame", _authenticated(_trickle, token=token),
              IDLE_S, 3 * IDLE_S),
        Timed("authenticated, Metadata every 1 s", _authenticated(_asking, token=token),
              0, None),
    ]
    wait = 2 * IDLE_S + 1.0  # the asking one must outlive the idle deadline by far

    def run(case: Timed) -> None:
        try:
            with connect(node.port) as connection:
                case.closed = case.behave(connection, wait)
        except BaseException as error:  # reported below, by case
            case.error = error

    threads = [threading.Thread(target=run, args=(case,), daemon=True) for case in cases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=wait + 3 * IDLE_S + 10)
    assert not any(thread.is_alive() for thread in threads), "a case did not end in time"
    problems = []
    for case in cases:
        if case.error is not None:
            problems.append(f"{case.name}: {case.error!r}")
        elif case.high is None:
            if case.closed is not None:
                problems.append(f"{case.name}: closed at {case.closed:.2f} s")
        # EARLY: asyncio runs a timer up to its clock resolution before its time.
        elif case.closed is None or not case.low - EARLY <= case.closed <= case.high:
            problems.append(f"{case.name}: closed at {case.closed} s, expected within "
                            f"[{case.low}, {case.high}] s")
    assert not problems, problems
    wait_logged(node, f"not authenticated within {SASL_S:g} s")
    wait_logged(node, "a frame of 200 bytes did not arrive within")
    assert_served(cluster, node)


# ------------------------------------------------------------------ connections per address


def _open_many(cluster: LocalCluster, port: int, count: int
               ) -> tuple[list[KafkaSocket], list[float]]:
    """``count`` connections opened at once: those served (authenticated as the admin, so
    the SASL deadline leaves them be), and for those closed at once, how many seconds after
    they opened that was seen. Quick, so that the idle deadline closes none meanwhile."""
    opened = [KafkaSocket(port) for _ in range(count)]
    time.sleep(0.5)
    served, refused = [], []
    for connection in opened:
        closed = connection.closed_within(0.01)
        if closed is None:
            answer = connection.authenticate("admin", cluster.admin_token)
            assert answer["error_code"] == 0, answer
            served.append(connection)
        else:
            connection.close()
            refused.append(closed)
    return served, refused


def test_connections_over_the_per_ip_limit_are_closed_at_once(cluster: LocalCluster,
                                                               node: Node) -> None:
    held: list[KafkaSocket] = []
    try:
        served, refused = _open_many(cluster, node.port, PER_IP + 5)
        held += served
        assert (len(served), len(refused)) == (PER_IP, 5), (len(served), refused)
        assert max(refused) <= AT_ONCE_S, refused
        for connection in held:  # every one held is served
            assert connection.metadata()["brokers"]
        for connection in held[:3]:
            connection.close()
        del held[:3]
        time.sleep(0.2)  # the server reads the three ends
        served, refused = _open_many(cluster, node.port, 4)
        held += served
        assert (len(served), len(refused)) == (3, 1), (len(served), refused)
        for connection in held:
            assert connection.metadata()["brokers"]
    finally:
        for connection in held:
            connection.close()
    wait_logged(node, "the limit (max.connections.per.ip)")
    wait_until(lambda: _try_served(cluster, node), "a well-behaved client served again", 5.0)


def _try_served(cluster: LocalCluster, node: Node) -> bool:
    try:
        assert_served(cluster, node)
    except (ConnectionError, OSError, AssertionError):
        return False
    return True
