"""The Kafka-port attacks of ``bench_hostile.py``, and its well-behaved Kafka client.

Each attack goes at the Kafka ports of the controllers and the brokers (``_kafka_ports``):
oversize frame sizes, junk frames, connections that never finish SASL, and more connections
than ``max.connections.per.ip`` allows; ``_kafka_calm`` is the well-behaved client measured
alongside (ApiVersions and SASL once, then Metadata in a loop on one connection).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import struct
import time
from collections.abc import Awaitable, Callable
from typing import Any

from _http_load import percentile
from chunkraft.broker_agent.config import BrokerConfig
from chunkraft.controller.config import ControllerConfig
from chunkraft.kafka.codec.messages import (
    api_specs,
    decode,
    decoder,
    encode,
    request_header_version,
    response_header_version,
)
from chunkraft.local.local_cluster import LocalCluster

KAFKA_CONCURRENCY = 8
"""kafka-oversize and kafka-junk: hostile connections in flight at once."""
KAFKA_CLOSE_WAIT_S = 5.0
"""A hostile Kafka connection the server has not closed by then counts as left open."""
SLOW_SASL_PER_PORT = 100
MANY_OVER_LIMIT = 100
KAFKA_CALM_INTERVAL_S = 0.02
KAFKA_CALM_TOPIC = "kafka-calm"
KAFKA_CLOSED_LINE = "Kafka connection from"




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


def kafka_calm(port: int, token: str, start: float, end: float) -> dict[str, Any]:
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


def kafka_attack(name: str, cluster: LocalCluster, leader: int, hostile_token: str,
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
