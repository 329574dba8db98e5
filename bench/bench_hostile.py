"""Hostile and heavy input against a running cluster (issue 15): does the quorum stay available?

3 controllers + 3 brokers on 127.0.0.1 with default settings (``LocalCluster``). All along, 4
well-behaved clients (their own process, ``_http_load``) create one topic at a time through
REST v3 with the admin's token. Each attack runs inside one measured window of theirs:

- ``baseline``: no attack (the reference: a baseline row with errors fails the run);
- ``unauthorized-8mb``: a principal with no ALTER right sends an 8 MB validate_only
  ``topics:create-partitions`` (1,000 existing topics x 1,000 manual assignments);
- ``admin-8mb``: the same body from the admin;
- ``admin-largest-validate`` / ``admin-largest-commit``: the largest createPartitions the
  default limits admit (10 topics x 999 new partitions with RF-3 assignments, plus the epoch
  bumps of the 10 existing partitions: 10,000 records), validate_only, then for real;
- ``raft-junk-16mib`` / ``raft-junk-64mib``: a plain TCP connection to the leader's Raft port
  announces a 2 GiB message, then sends 16 / 64 MiB of zeros;
- ``slowloris-500``: 500 connections to one controller's HTTP port, each dribbling a header
  byte now and then;
- ``produce-flood``: 8 producers append 100 x 1 KiB records per batch with acks=all to an
  RF-3 topic of 6 partitions (180 s; 30 s with ``--quick``);
- the Kafka ports (issue 32), of the 3 controllers and the 3 brokers at once:
  ``kafka-oversize`` (connection after connection announcing a frame over
  ``socket.request.max.bytes``, 2^31-1 or the node's limit + 1, then sending 64 KiB of it),
  ``kafka-junk`` (whole frames of junk: random bytes, an unknown API key, a negative size, a
  Metadata header with a random body after SASL as ``User:mallory``),
  ``kafka-slow-sasl`` (100 connections a port that send ApiVersions and never authenticate,
  opened again as the server closes them), ``kafka-many-connections`` (to the leader's and
  broker 0's Kafka port, ``max.connections.per.ip`` + 100 connections, each authenticated as
  ``User:mallory`` and held to the window's end).

In every window 2 well-behaved Kafka clients (a process each) also run, one on the leader's
Kafka port and one on broker 0's: ApiVersions and SASL/PLAIN as the admin once, then Metadata
of one topic every 20 ms on that one connection; their ops, errors, p50 and p99 are the row's
``kafka_good_*``, held to the same target. ``kafka_log_lines`` counts the "Kafka connection
... closed" lines the nodes logged in the window.

Per attack: how long the hostile request took to be answered (or its connection closed; for
the Kafka attacks the slowest close, for kafka-slow-sasl the median), the
Raft elections seen (the largest rise of a controller's term), brokers fenced (the controllers'
log lines), and the well-behaved clients' ops, errors, p50 and p99. Every window is wrapped in
the steady-leader rule of ``_steady`` (the quorum sampled before the load starts and 1 s after
it ends): its row carries ``leadership`` (start, end, and what moved), and an attack is meant
to leave the leader where it was, so a window whose leader or term moved fails the run with
the sentence naming the counts. One JSON line per row, then a table; ``--results`` appends it
to ``bench/RESULTS.md``. Exit 1 if the baseline had errors or any window's leader moved.

    .venv/bin/python bench/bench_hostile.py [--quick] [--only NAME ...] [--results]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import socket
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _http_load import Workload, percentile, run_load
from _report import append_section, emit
from _steady import LeadershipWindow, exit_status, failed_rows
from chunkraft.broker_agent.config import BrokerConfig
from chunkraft.client.broker_client import AsyncBrokerClient
from chunkraft.controller.config import ControllerConfig
from chunkraft.deploy.local_cluster import LocalCluster
from chunkraft.kafka.codec.messages import (
    api_specs,
    decode,
    decoder,
    encode,
    request_header_version,
    response_header_version,
)

KAFKA_ATTACKS = ("kafka-oversize", "kafka-junk", "kafka-slow-sasl", "kafka-many-connections")
ATTACKS = ("baseline", "produce-flood", *KAFKA_ATTACKS, "unauthorized-8mb", "admin-8mb",
           "admin-largest-validate", "admin-largest-commit", "raft-junk-16mib",
           "raft-junk-64mib", "slowloris-500")
# The flood runs first: the calm clients create about 3,000 RF-3 topics a window, and a broker
# keeps one file descriptor per log segment, so after eight windows (24,000 partition logs per
# broker) it meets this machine's limit of 20,000 descriptors and answers KAFKA_STORAGE_ERROR.
# The Kafka attacks come next: kafka-many-connections needs 1,100 more descriptors a target.
CLIENTS = 4
HOSTILE_TOPICS = 1_000
ASSIGNMENTS_PER_TOPIC = 1_000
FLOOD_PARTITIONS = 6
FLOOD_PRODUCERS = 8
FLOOD_BATCH = 100
RECORD_BYTES = 1024
HOSTILE_TIMEOUT_S = 120.0
"""No hostile request is waited for longer than this."""
KAFKA_CONCURRENCY = 8
"""kafka-oversize and kafka-junk: hostile connections in flight at once."""
KAFKA_CLOSE_WAIT_S = 5.0
"""A hostile Kafka connection the server has not closed by then counts as left open."""
SLOW_SASL_PER_PORT = 100
MANY_OVER_LIMIT = 100
KAFKA_CALM_INTERVAL_S = 0.02
KAFKA_CALM_TOPIC = "kafka-calm"
KAFKA_CLOSED_LINE = "Kafka connection from"


def _post(url: str, path: str, token: str, body: bytes, timeout: float = HOSTILE_TIMEOUT_S
          ) -> tuple[float, int, str]:
    """Seconds until answered, the HTTP status (0: no answer) and the answer's start."""
    began = time.monotonic()
    try:
        answer = httpx.post(f"{url}{path}", content=body, timeout=timeout, headers={
            "authorization": f"Bearer {token}", "content-type": "application/json"})
        return time.monotonic() - began, answer.status_code, answer.text[:200]
    except httpx.HTTPError as error:
        return time.monotonic() - began, 0, repr(error)[:200]


def _hostile_body() -> bytes:
    topics = [{"topic_name": f"hostile-{t}", "partitions_count": 1 + ASSIGNMENTS_PER_TOPIC,
               "assignments": [[b % 3, (b + 1) % 3, (b + 2) % 3]
                               for b in range(ASSIGNMENTS_PER_TOPIC)]}
              for t in range(HOSTILE_TOPICS)]
    return json.dumps({"topics": topics, "validate_only": True},
                      separators=(",", ":")).encode()


LARGEST_TOPICS = 10
LARGEST_NEW_PARTITIONS = 999  # + 10 epoch bumps of the existing partitions = 10,000 records


def _largest_body(validate_only: bool) -> bytes:
    topics = [{"topic_name": f"largest-{t}", "partitions_count": 1 + LARGEST_NEW_PARTITIONS,
               "assignments": [[b % 3, (b + 1) % 3, (b + 2) % 3]
                               for b in range(LARGEST_NEW_PARTITIONS)]}
              for t in range(LARGEST_TOPICS)]
    return json.dumps({"topics": topics, "validate_only": validate_only}).encode()


def _raft_junk(port: int, mib: int) -> tuple[float, int, str]:
    """Announces a 2 GiB message on the Raft port, then sends ``mib`` MiB of zeros; seconds
    until the peer closed the connection (or everything was sent), 0 and how it ended."""
    began = time.monotonic()
    chunk = bytes(64 * 1024)
    sent = 0
    outcome = "all sent"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(struct.pack("i", 0x7FFFFFFF))
            while sent < mib * 1024 * 1024 and time.monotonic() - began < HOSTILE_TIMEOUT_S:
                sock.sendall(chunk)
                sent += len(chunk)
            sock.settimeout(5)
            if sock.recv(1) == b"":
                outcome = f"closed by the peer after {sent >> 20} MiB"
        except OSError as error:
            outcome = f"closed by the peer after {sent >> 20} MiB ({type(error).__name__})"
    return time.monotonic() - began, 0, outcome


def _slowloris(port: int, count: int, seconds: float) -> tuple[float, int, str]:
    """``count`` connections dribbling a request's headers for ``seconds``; how many the
    server closed on its own."""
    socks: list[socket.socket] = []
    began = time.monotonic()
    for _ in range(count):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(b"POST /v3/clusters HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            sock.setblocking(False)
            socks.append(sock)
        except OSError:
            break
    opened = len(socks)
    closed = 0
    end = began + seconds
    while socks and time.monotonic() < end:
        time.sleep(1.0)
        alive = []
        for sock in socks:
            try:
                sock.send(b"X")
                alive.append(sock)
            except (BlockingIOError, InterruptedError):
                alive.append(sock)
            except OSError:
                closed += 1
                sock.close()
        socks = alive
    for sock in socks:
        sock.close()
    return time.monotonic() - began, 0, f"{opened} opened, {closed} closed by the server"


# ------------------------------------------------------------------ the Kafka ports (issue 32)


def _kafka_frame(api_key: int, version: int, body: dict[str, Any], correlation: int = 1
                 ) -> bytes:
    """A request frame (size, RequestHeader v1 or v2, body) by chunkraft's codec."""
    header = encode("RequestHeader", request_header_version(api_key, version), {
        "request_api_key": api_key, "request_api_version": version,
        "correlation_id": correlation, "client_id": "bench_hostile"})
    payload = header + encode(api_specs()[api_key].request.name, version, body)
    return struct.pack(">i", len(payload)) + payload


_API_VERSIONS_V3 = {"client_software_name": "bench_hostile", "client_software_version": "1"}
_METADATA_V12 = {"topics": [{"name": KAFKA_CALM_TOPIC, "topic_id": None}],
                 "allow_auto_topic_creation": False,
                 "include_topic_authorized_operations": False}


async def _kafka_call(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      api_key: int, version: int, body: dict[str, Any], correlation: int = 1,
                      timeout: float = 10.0) -> dict[str, Any]:
    """One request and its answer's body; the error codes are the caller's to judge."""
    writer.write(_kafka_frame(api_key, version, body, correlation))
    await writer.drain()
    (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), timeout))
    frame = await asyncio.wait_for(reader.readexactly(size), timeout)
    _, end = decoder("ResponseHeader", response_header_version(api_key, version))(
        frame, 0, len(frame))
    return decode(api_specs()[api_key].response.name, version, frame, end)


async def _kafka_login(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       principal: str, token: str) -> None:
    """ApiVersions v3, SaslHandshake v1 PLAIN and SaslAuthenticate v2; RuntimeError if any
    answers an error."""
    for key, version, body in (
            (18, 3, _API_VERSIONS_V3), (17, 1, {"mechanism": "PLAIN"}),
            (36, 2, {"auth_bytes": b"\0" + principal.encode() + b"\0" + token.encode()})):
        answer = await _kafka_call(reader, writer, key, version, body, key)
        if answer["error_code"]:
            raise RuntimeError(f"API key {key} answered error {answer['error_code']}")


async def _closed_after(reader: asyncio.StreamReader, opened: float,
                        wait: float = KAFKA_CLOSE_WAIT_S) -> float | None:
    """Seconds from ``opened`` until the server closed the connection (None: still open
    after ``wait``); whatever it sends meanwhile is read and dropped."""
    ends = time.monotonic() + wait
    try:
        for _ in range(10_000):
            left = ends - time.monotonic()
            if left <= 0 or not await asyncio.wait_for(reader.read(65536), left):
                break
    except TimeoutError:
        return None
    except OSError:
        pass  # reset: closed with our bytes unread
    return time.monotonic() - opened if time.monotonic() < ends else None


def _kafka_calm(port: int, token: str, start: float, end: float) -> dict[str, Any]:
    """A well-behaved Kafka client in its own process: ApiVersions and SASL/PLAIN as the
    admin once, then Metadata of one topic every 20 ms on that connection from before
    ``start`` to ``end`` (wall clock); the latencies of those sent in the window, the errors
    (an error code, or a connection lost: it connects again) and the first one."""
    latencies: list[float] = []
    errors = [0]
    first: list[str] = []
    connections = [0]

    def failed(what: str) -> None:
        errors[0] += 1
        if not first:
            first.append(what[:200])

    async def main() -> None:
        for _ in range(1000):  # connections: one, unless the server drops it
            if time.time() >= end:
                return
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", port), 10)
            except (OSError, TimeoutError) as error:
                if time.time() >= start:
                    failed(f"connect: {error!r}")
                await asyncio.sleep(0.2)
                continue
            connections[0] += 1
            try:
                await _kafka_login(reader, writer, "admin", token)
                for correlation in range(100, 10**9):
                    began_wall, began = time.time(), time.perf_counter()
                    if began_wall >= end:
                        return
                    answer = await _kafka_call(reader, writer, 3, 12, _METADATA_V12,
                                               correlation)
                    if began_wall >= start:
                        latencies.append((time.perf_counter() - began) * 1000)
                        codes = [t["error_code"] for t in answer["topics"]]
                        if any(codes):
                            failed(f"Metadata answered {codes}")
                    await asyncio.sleep(KAFKA_CALM_INTERVAL_S)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, RuntimeError) as error:
                if time.time() >= start:
                    failed(repr(error))
                await asyncio.sleep(0.2)
            finally:
                writer.close()

    asyncio.run(main())
    return {"latencies": latencies, "errors": errors[0], "first_error": "".join(first),
            "connections": connections[0]}


def _default(config: type[ControllerConfig | BrokerConfig], name: str) -> int:
    """The default of an integer setting of a controller's or a broker's config."""
    (value,) = (f.default for f in dataclasses.fields(config) if f.name == name)
    assert isinstance(value, int), (config, name)
    return value


def _kafka_ports(cluster: LocalCluster) -> list[tuple[str, int, int]]:
    """(kind, port, socket.request.max.bytes) of every controller's and broker's Kafka
    listener (the bench's cluster runs with the defaults)."""
    controller = _default(ControllerConfig, "socket_request_max_bytes")
    broker = _default(BrokerConfig, "socket_request_max_bytes")
    return [*(("controllers", n.kafka_port, controller) for n in cluster.nodes.values()),
            *(("brokers", b.kafka_port, broker) for b in cluster.broker_nodes.values())]


Closes = list[tuple[str, float | None]]
"""(the port's kind, seconds until the server closed the connection or None: it did not)."""


def _close_summary(closes: Closes, failures: list[str], seconds: float, what: str,
                   unit_ms: bool = True) -> tuple[float, int, str]:
    """(the slowest close, 0, a sentence): how many connections, and per kind of port how
    many the server closed, the p50 and slowest close, how many it left open; then the
    connections that failed (a connect or an answer that timed out, by what)."""
    done = [c for _, c in closes if c is not None]
    slowest = KAFKA_CLOSE_WAIT_S if len(done) < len(closes) else max(done, default=0.0)
    scale, unit = (1000, "ms") if unit_ms else (1, "s")
    parts = []
    for kind in ("controllers", "brokers"):
        mine = [c for k, c in closes if k == kind]
        ok = [c for c in mine if c is not None]
        parts.append(f"{kind}: {len(ok)} closed, p50 {percentile(ok, 0.5) * scale:.0f} {unit}, "
                     f"slowest {max(ok, default=0) * scale:.0f} {unit}, "
                     f"{len(mine) - len(ok)} left open")
    kinds = {text: failures.count(text) for text in sorted(set(failures))}
    failed = ", ".join(f"{count} {text}" for text, count in kinds.items()) or "none"
    return slowest, 0, (f"{len(closes)} {what} ({len(closes) / max(seconds, 1e-3):.0f}/s); "
                        f"{'; '.join(parts)}; failed: {failed}")


async def _connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection within 10 s, else TimeoutError."""
    return await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)


def _failure(step: str, error: BaseException) -> str:
    return f"{step} {type(error).__name__}"


async def _churn(seconds: float, ports: list[tuple[str, int, int]],
                 one: Callable[[int, int, int], Awaitable[float | None]]
                 ) -> tuple[Closes, list[str]]:
    """``one(i, port, limit)`` again and again over the ports in turn, KAFKA_CONCURRENCY at a
    time, for ``seconds``; the closes and the failures."""
    ends = time.monotonic() + seconds
    closes: Closes = []
    failures: list[str] = []
    counter = iter(range(10**9))

    async def worker() -> None:
        for _ in range(10**6):
            if time.monotonic() >= ends:
                return
            i = next(counter)
            kind, port, limit = ports[i % len(ports)]
            try:
                closes.append((kind, await one(i, port, limit)))
            except (OSError, TimeoutError, asyncio.IncompleteReadError, RuntimeError) as error:
                failures.append(_failure(f"{kind} connect or SASL", error))
                await asyncio.sleep(0.05)

    await asyncio.gather(*(worker() for _ in range(KAFKA_CONCURRENCY)))
    return closes, failures


def _kafka_oversize(ports: list[tuple[str, int, int]], seconds: float
                    ) -> tuple[float, int, str]:
    """Connection after connection announcing a frame over the node's limit, then sending
    64 KiB of it (a server that buffered it would read on)."""
    body = bytes(64 * 1024)

    async def one(i: int, port: int, limit: int) -> float | None:
        opened = time.monotonic()
        reader, writer = await _connect(port)
        try:
            writer.write(struct.pack(">i", 2**31 - 1 if i % 2 else limit + 1) + body)
            return await _closed_after(reader, opened)
        finally:
            writer.close()

    began = time.monotonic()
    closes, failures = asyncio.run(_churn(seconds, ports, one))
    return _close_summary(closes, failures, time.monotonic() - began, "oversize connections")


def _kafka_junk(ports: list[tuple[str, int, int]], seconds: float, token: str
                ) -> tuple[float, int, str]:
    """Whole frames of junk (so that the server reads them through, then must refuse them):
    random bytes as a header of an API key that does not exist, a valid header of API key
    9999, a negative size, or (after SASL as a principal without ACLs) a Metadata v12 header
    and a body whose topic array claims 2^28 entries, then random bytes."""
    rng = random.Random(32)

    async def one(i: int, port: int, limit: int) -> float | None:
        opened = time.monotonic()
        reader, writer = await _connect(port)
        try:
            kind = i % 4
            if kind == 0:  # junk; its first byte makes an API key of 20480 and more
                junk = bytes([rng.randrange(0x50, 0x80)]) + rng.randbytes(rng.randrange(7, 1024))
                writer.write(struct.pack(">i", len(junk)) + junk)
            elif kind == 1:
                frame = _kafka_frame(18, 0, {}, i)
                writer.write(frame[:4] + struct.pack(">h", 9999) + frame[6:])
            elif kind == 2:
                writer.write(struct.pack(">i", -rng.randrange(1, 2**31)))
            else:
                await _kafka_login(reader, writer, "mallory", token)
                opened = time.monotonic()
                junk = (struct.pack(">hhih", 3, 12, i, -1) + b"\0" + b"\xff\xff\xff\x7f"
                        + rng.randbytes(rng.randrange(1, 512)))
                writer.write(struct.pack(">i", len(junk)) + junk)
            return await _closed_after(reader, opened)
        finally:
            writer.close()

    began = time.monotonic()
    closes, failures = asyncio.run(_churn(seconds, ports, one))
    return _close_summary(closes, failures, time.monotonic() - began, "junk connections")


def _kafka_slow_sasl(ports: list[tuple[str, int, int]], seconds: float
                     ) -> tuple[float, int, str]:
    """SLOW_SASL_PER_PORT connections a port, each sending ApiVersions and then nothing;
    one is opened again as the server closes it, until ``seconds`` have passed. Returns the
    median time the server took to close one (its SASL deadline)."""
    ends = time.monotonic() + seconds
    closes: Closes = []
    failures: list[str] = []

    async def holder(kind: str, port: int) -> None:
        for _ in range(1000):
            if time.monotonic() >= ends:
                return
            opened = time.monotonic()
            try:
                reader, writer = await _connect(port)
            except (OSError, TimeoutError) as error:
                failures.append(_failure(f"{kind} connect", error))
                await asyncio.sleep(0.5)
                continue
            try:
                await _kafka_call(reader, writer, 18, 3, _API_VERSIONS_V3)
                closed = await _closed_after(reader, opened, ends - time.monotonic())
                if closed is not None:  # else the window ended first: not counted
                    closes.append((kind, closed))
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as error:
                failures.append(_failure(f"{kind} ApiVersions", error))
            finally:
                writer.close()

    async def main() -> None:
        await asyncio.gather(*(holder(kind, port) for kind, port, _ in ports
                               for _ in range(SLOW_SASL_PER_PORT)))

    began = time.monotonic()
    asyncio.run(main())
    _, _, sentence = _close_summary(closes, failures, time.monotonic() - began,
                                    "connections closed at their SASL deadline",
                                    unit_ms=False)
    return percentile([c for _, c in closes if c is not None], 0.5), 0, sentence


def _kafka_many_connections(ports: list[tuple[str, int]], seconds: float, token: str
                            ) -> tuple[float, int, str]:
    """Per port: ``max.connections.per.ip`` + MANY_OVER_LIMIT connections, each
    authenticated as a principal without ACLs when it is served, held until ``seconds``
    have passed. Returns the slowest close of those refused (closed at once, the limit)."""
    limit = _default(ControllerConfig, "max_connections_per_ip")
    assert limit == _default(BrokerConfig, "max_connections_per_ip")
    ends = time.monotonic() + seconds
    held: dict[int, list[asyncio.StreamWriter]] = {port: [] for _, port in ports}
    refused: dict[int, list[float]] = {port: [] for _, port in ports}
    failures: list[str] = []

    async def open_one(kind: str, port: int, gate: asyncio.Semaphore) -> None:
        async with gate:
            opened = time.monotonic()
            try:
                reader, writer = await _connect(port)
            except (OSError, TimeoutError) as error:
                failures.append(_failure(f"{kind} connect", error))
                return
            closed = await _closed_after(reader, opened, 0.3)
            if closed is not None:
                refused[port].append(closed)
                writer.close()
                return
            try:
                await _kafka_login(reader, writer, "mallory", token)
                held[port].append(writer)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, RuntimeError) as error:
                failures.append(_failure(f"{kind} SASL", error))
                writer.close()

    opened_in: list[float] = []

    async def main() -> None:
        gate = asyncio.Semaphore(50)
        began = time.monotonic()
        await asyncio.gather(*(open_one(kind, port, gate) for kind, port in ports
                               for _ in range(limit + MANY_OVER_LIMIT)))
        opened_in.append(time.monotonic() - began)
        await asyncio.sleep(max(ends - time.monotonic(), 0))
        for writers in held.values():
            for writer in writers:
                writer.close()

    asyncio.run(main())
    slowest = max((c for closes in refused.values() for c in closes), default=0.0)
    per_port = "; ".join(f"{kind}: {len(held[p])} held + {len(refused[p])} refused (slowest "
                         f"{max(refused[p], default=0) * 1000:.0f} ms)" for kind, p in ports)
    kinds = {text: failures.count(text) for text in sorted(set(failures))}
    failed = ", ".join(f"{count} {text}" for text, count in kinds.items()) or "none"
    # Opened in more than the window: the calm clients had gone when the last came, so a
    # port may hold the whole limit.
    return slowest, 0, (f"limit {limit} (+ the calm client's): {per_port}; all opened in "
                        f"{opened_in[0]:.1f} s of {seconds:.0f} s; failed: {failed}")


def _kafka_attack(name: str, cluster: LocalCluster, leader: int, hostile_token: str,
                  seconds: float) -> tuple[float, int, str]:
    ports = _kafka_ports(cluster)
    if name == "kafka-oversize":
        return _kafka_oversize(ports, seconds)
    if name == "kafka-junk":
        return _kafka_junk(ports, seconds, hostile_token)
    if name == "kafka-slow-sasl":
        return _kafka_slow_sasl(ports, seconds)
    if name == "kafka-many-connections":
        return _kafka_many_connections(
            [("controller (leader)", cluster.nodes[leader].kafka_port),
             ("broker 0", cluster.broker_nodes[0].kafka_port)], seconds, hostile_token)
    raise ValueError(name)


async def _flood_task(urls: dict[int, str], leaders: dict[int, int], token: str, task: int,
                      end: float, counts: list[int]) -> None:
    value = b"v" * RECORD_BYTES
    clients = {b: AsyncBrokerClient(url, token=token, timeout=60) for b, url in urls.items()}
    try:
        for seq in range(1_000_000):
            if time.monotonic() >= end:
                return
            partition = (task + seq) % FLOOD_PARTITIONS
            records = [(b"k%d" % i, value, int(time.time() * 1000)) for i in range(FLOOD_BATCH)]
            try:
                answer = await clients[leaders[partition]].produce_records(
                    "flood", partition, FLOOD_PARTITIONS, records, acks=-1)
                counts[0 if answer.error_code == 0 else 1] += 1
                if answer.error_code and not counts[2]:
                    counts[2] = answer.error_code
            except httpx.HTTPError:
                counts[1] += 1
                await asyncio.sleep(0.05)
    finally:
        for client in clients.values():
            await client.aclose()


def _flood_process(urls: dict[int, str], leaders: dict[int, int], token: str, seconds: float
                   ) -> tuple[int, int, int]:
    """Runs the producers in their own process: (batches acknowledged, batches refused, the
    first refusal's error code)."""
    counts = [0, 0, 0]
    end = time.monotonic() + seconds

    async def main() -> None:
        await asyncio.gather(*(_flood_task(urls, leaders, token, t, end, counts)
                               for t in range(FLOOD_PRODUCERS)))

    asyncio.run(main())
    return counts[0], counts[1], counts[2]


def _flood_leaders(cluster: LocalCluster, token: str) -> dict[int, int]:
    """Each flood partition's leader, found by a one-record acks=1 produce."""
    leaders: dict[int, int] = {}

    async def probe() -> None:
        deadline = time.monotonic() + 60
        while len(leaders) < FLOOD_PARTITIONS and time.monotonic() < deadline:
            for broker_id in cluster.broker_nodes:
                async with AsyncBrokerClient(cluster.broker_url(broker_id), token=token,
                                             timeout=10) as client:
                    for partition in range(FLOOD_PARTITIONS):
                        if partition in leaders:
                            continue
                        answer = await client.produce_records(
                            "flood", partition, FLOOD_PARTITIONS, [(b"k", b"v", 0)], acks=1)
                        if answer.error_code == 0:
                            leaders[partition] = broker_id
            await asyncio.sleep(0.2)

    asyncio.run(probe())
    if len(leaders) < FLOOD_PARTITIONS:
        raise RuntimeError(f"leaders of the flood topic not found: {leaders}")
    return leaders


def _log_lines(cluster: LocalCluster, needle: str, *, brokers: bool = False) -> int:
    """Lines containing ``needle`` in the controllers' logs (and the brokers', if asked)."""
    count = 0
    paths = [node.log_path for node in cluster.nodes.values()]
    if brokers:
        paths += [broker.log_path for broker in cluster.broker_nodes.values()]
    for path in paths:
        if path.exists():
            with path.open("rb") as log:
                count += sum(1 for line in log if needle.encode() in line)
    return count


def _attack(name: str, cluster: LocalCluster, args: argparse.Namespace, leader: int,
            hostile_token: str) -> Callable[[float, float], tuple[float, int, str]]:
    """The attack as ``on_window(start, end)`` of the load run: it starts 2 s into the
    window and returns (seconds, HTTP status, what happened)."""
    cluster_id = str(cluster.cluster_id)
    path = f"/v3/clusters/{cluster_id}/topics:create-partitions"
    url = cluster.nodes[leader].url

    def run(start: float, end: float) -> tuple[float, int, str]:
        time.sleep(max(start + 2.0 - time.time(), 0))
        if name == "baseline":
            return 0.0, 0, "no attack"
        if name == "unauthorized-8mb":
            return _post(url, path, hostile_token, args.hostile_body)
        if name == "admin-8mb":
            return _post(url, path, cluster.admin_token, args.hostile_body)
        if name.startswith("admin-largest-"):
            return _post(url, path, cluster.admin_token,
                         _largest_body(name == "admin-largest-validate"))
        if name.startswith("raft-junk-"):
            mib = int(name.removeprefix("raft-junk-").removesuffix("mib"))
            return _raft_junk(cluster.nodes[leader].raft_port, mib)
        if name == "slowloris-500":
            return _slowloris(int(url.rsplit(":", 1)[1]), 500, max(end - time.time() - 1, 1))
        if name in KAFKA_ATTACKS:
            return _kafka_attack(name, cluster, leader, hostile_token,
                                 max(end - time.time() - 1, 1))
        if name == "produce-flood":
            urls = {b: cluster.broker_url(b) for b in cluster.broker_nodes}
            context = get_context("spawn")
            with context.Pool(1) as pool:
                began = time.monotonic()
                acked, refused, code = pool.apply(_flood_process, (
                    urls, args.flood_leaders, cluster.admin_token,
                    max(end - time.time() - 1, 1)))
            return time.monotonic() - began, 0, f"{acked} batches acknowledged, " \
                                                 f"{refused} refused (first: error {code})"
        raise ValueError(name)

    return run


def _with_kafka_calm(cluster: LocalCluster, leader: int,
                     attack: Callable[[float, float], tuple[float, int, str]],
                     outcome: list[tuple[float, int, str]], calm: list[dict[str, Any]]
                     ) -> Callable[[float, float], None]:
    """``on_window`` for the load run: starts the 2 well-behaved Kafka clients (the leader's
    Kafka port, broker 0's), runs the attack, then collects their figures."""
    ports = {"controller": cluster.nodes[leader].kafka_port,
             "broker": cluster.broker_nodes[0].kafka_port}

    def on_window(start: float, end: float) -> None:
        with get_context("spawn").Pool(len(ports)) as pool:
            runs = {target: pool.apply_async(_kafka_calm, (port, cluster.admin_token, start,
                                                          end))
                    for target, port in ports.items()}
            outcome.append(attack(start, end))
            calm.extend({"target": target, **run.get(timeout=max(end - time.time(), 0) + 60)}
                        for target, run in runs.items())

    return on_window


def measure(name: str, cluster: LocalCluster, args: argparse.Namespace,
            hostile_token: str) -> dict[str, Any]:
    leader = cluster.wait_ready(timeout=60)
    fenced_before = _log_lines(cluster, "fenced: no heartbeat")
    kafka_lines_before = _log_lines(cluster, KAFKA_CLOSED_LINE, brokers=True)
    duration = args.flood_seconds if name == "produce-flood" else args.window
    attack = _attack(name, cluster, args, leader, hostile_token)
    outcome: list[tuple[float, int, str]] = []
    calm: list[dict[str, Any]] = []
    workload = Workload(kind="v3-create-topic", urls=tuple(cluster.urls),
                        prefix=f"good-{name}", replication_factor=3,
                        cluster_id=str(cluster.cluster_id), timeout=30.0,
                        headers=tuple(cluster.headers.items()))  # the admin's token only
    # A controller busy with an attack may answer slowly: 10 s before it counts as silent.
    with LeadershipWindow(lambda: cluster.leadership(timeout=10)) as window:
        result = run_load(workload, clients=CLIENTS, duration=duration,
                          on_window=_with_kafka_calm(cluster, leader, attack, outcome, calm))
        time.sleep(1.0)  # an election the attack caused may come just after it
    leadership = window.result()
    seconds, status, what = outcome[0] if outcome else (0.0, 0, "no outcome")
    kafka_latencies = [ms for run in calm for ms in run["latencies"]]
    return {
        "bench": "hostile", "attack": name, "hostile_seconds": round(seconds, 3),
        "hostile_status": status, "hostile_outcome": what,
        "raft_term_increases": leadership.term_increments(),
        "brokers_fenced": _log_lines(cluster, "fenced: no heartbeat") - fenced_before,
        "good_ops": result.ops, "good_errors": result.errors,
        "good_first_error": result.first_error[:200],
        "good_p50_ms": round(percentile(result.latencies_ms, 0.5), 1),
        "good_p99_ms": round(percentile(result.latencies_ms, 0.99), 1),
        "kafka_good_ops": len(kafka_latencies),
        "kafka_good_errors": sum(run["errors"] for run in calm),
        "kafka_good_first_error": next((r["first_error"] for r in calm if r["first_error"]),
                                       ""),
        "kafka_good_p50_ms": round(percentile(kafka_latencies, 0.5), 1),
        "kafka_good_p99_ms": round(percentile(kafka_latencies, 0.99), 1),
        "kafka_good_connections": sum(run["connections"] for run in calm),
        "kafka_good_by_target": {run["target"]: {
            "ops": len(run["latencies"]), "errors": run["errors"],
            "p50_ms": round(percentile(run["latencies"], 0.5), 1),
            "p99_ms": round(percentile(run["latencies"], 0.99), 1),
            "max_ms": round(max(run["latencies"], default=0.0), 1)} for run in calm},
        "kafka_log_lines": _log_lines(cluster, KAFKA_CLOSED_LINE, brokers=True)
        - kafka_lines_before,
        "window_s": duration, **leadership.fields(),
    }


def _target_met(row: dict[str, Any]) -> bool:
    kafka_calm_met = "kafka_good_ops" not in row or (
        row["kafka_good_ops"] > 0 and row["kafka_good_errors"] == 0
        and row["kafka_good_p99_ms"] <= 500)
    return (not row["leadership"]["moved"] and row["brokers_fenced"] == 0
            and row["good_errors"] == 0 and row["good_p99_ms"] <= 500 and kafka_calm_met
            and (row["attack"] in ("baseline", "slowloris-500", "produce-flood",
                                   "kafka-slow-sasl")
                 or row["hostile_seconds"] <= 2.0))


def _by_target(row: dict[str, Any]) -> str:
    targets = row.get("kafka_good_by_target", {})
    return " / ".join(str(targets[t]["p99_ms"]) for t in ("controller", "broker")
                      if t in targets)


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| attack | hostile answered in | how | elections | brokers fenced | "
             "good ops | errors | p50 ms | p99 ms | Kafka ops | Kafka errors | Kafka p50 ms | "
             "Kafka p99 ms | Kafka p99 ms controller / broker | Kafka log lines | target |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['attack']} | {row['hostile_seconds']:.2f} s | "
            f"{row['hostile_status'] or ''} {row['hostile_outcome'][:160]} | "
            f"{row['raft_term_increases']} | {row['brokers_fenced']} | {row['good_ops']} | "
            f"{row['good_errors']} | {row['good_p50_ms']} | {row['good_p99_ms']} | "
            f"{row.get('kafka_good_ops', '')} | {row.get('kafka_good_errors', '')} | "
            f"{row.get('kafka_good_p50_ms', '')} | {row.get('kafka_good_p99_ms', '')} | "
            f"{_by_target(row)} | "
            f"{row.get('kafka_log_lines', '')} | {'met' if _target_met(row) else 'MISSED'} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 30 s produce flood")
    parser.add_argument("--only", nargs="*", choices=ATTACKS, default=None)
    parser.add_argument("--window", type=float, default=20.0,
                        help="seconds each attack's measured window lasts")
    parser.add_argument("--results", action="store_true", help="append to bench/RESULTS.md")
    args = parser.parse_args()
    args.flood_seconds = 30.0 if args.quick else 180.0
    args.body_mb = 0.0
    attacks = [a for a in ATTACKS if args.only is None or a in args.only]
    if "baseline" not in attacks:
        attacks.insert(0, "baseline")
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as base:
        cluster = LocalCluster(Path(base), broker_count=3)
        try:
            cluster.prepare()
            cluster.start()
            cluster.wait_ready(timeout=60)
            cluster.start_brokers()
            cluster.wait_brokers_ready(timeout=90)
            hostile_token = cluster.add_token("User:mallory", "bench_hostile: no ACLs")
            if {"unauthorized-8mb", "admin-8mb"} & set(attacks):
                args.hostile_body = _hostile_body()
                args.body_mb = len(args.hostile_body) / 1e6
                _create_topics(cluster, [f"hostile-{t}" for t in range(HOSTILE_TOPICS)], 1, 3)
            if any(a.startswith("admin-largest-") for a in attacks):
                _create_topics(cluster, [f"largest-{t}" for t in range(LARGEST_TOPICS)], 1, 3)
            _create_topics(cluster, [KAFKA_CALM_TOPIC], 1, 3)  # what the Kafka clients ask
            if "produce-flood" in attacks:
                _create_topics(cluster, ["flood"], FLOOD_PARTITIONS, 3)
                args.flood_leaders = _flood_leaders(cluster, cluster.admin_token)
            time.sleep(2.0)  # the new token reaches every node
            for name in attacks:
                row = measure(name, cluster, args, hostile_token)
                rows.append(row)
                emit(row)
        finally:
            for broker_id in list(cluster.broker_nodes):
                cluster.kill_broker(broker_id)
            for node_id in list(cluster.nodes):
                cluster.kill(node_id)
    lines = _table(rows)
    print("\n".join(lines))
    if args.results:
        append_section("Hostile input (issue 15)", [
            f"3 controllers + 3 brokers, default settings, {CLIENTS} well-behaved v3 "
            f"createTopics clients and 2 well-behaved Kafka clients (Metadata every "
            f"{KAFKA_CALM_INTERVAL_S * 1000:.0f} ms on the leader's and broker 0's Kafka "
            f"port), windows of {args.window:.0f} s (produce flood "
            f"{args.flood_seconds:.0f} s); the 8 MB bodies are {args.body_mb:.1f} MB.", "",
            *lines])
    return exit_status(problems(rows))


def problems(rows: list[dict[str, Any]]) -> list[str]:
    """Every reason the run fails: a baseline with errors or nothing done, and each window
    whose leader moved (the sentence of ``_steady``, naming the counts)."""
    found = [f"attack {row['attack']}: the baseline row has {row['good_errors']} errors and "
             f"{row['good_ops']} ops" for row in rows if row["attack"] == "baseline"
             and (row["good_errors"] or row["good_ops"] == 0)]
    return [*found, *failed_rows(rows, lambda row: f"attack {row['attack']}")]


def _create_topics(cluster: LocalCluster, names: list[str], partitions: int, rf: int) -> None:
    for start in range(0, len(names), 500):
        answer = httpx.post(f"{cluster.urls[0]}/controller/v1/create-topics", timeout=120,
                            headers={**cluster.headers, "content-type": "application/json"},
                            json={"topics": [{"name": n, "num_partitions": partitions,
                                              "replication_factor": rf}
                                             for n in names[start:start + 500]]})
        answer.raise_for_status()
        errors = [t for t in answer.json()["topics"] if t["error_code"] not in (0, 36)]
        if errors:
            raise RuntimeError(f"creating the bench's topics failed: {errors[:3]}")


if __name__ == "__main__":
    threading.current_thread().name = "bench_hostile"
    sys.exit(main())
