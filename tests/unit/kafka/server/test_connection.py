"""KafkaConnection (chunkraft.kafka.server.connection) through a real KafkaServer: framing,
in-order answers, the frame size, idle, SASL and frame deadlines, and what closes a connection
(only that one)."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import time
import warnings
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, cast

import pytest

from chunkraft.kafka.codec.messages import encode
from chunkraft.kafka.server import connection
from chunkraft.kafka.server.connection import ConnectionLimits
from chunkraft.kafka.server.requests import KafkaSession
from tests.unit.kafka.server.support import (
    LIMITS,
    METADATA,
    Recorder,
    anonymous,
    request_frame,
    serving,
    sized,
)


def run(scenario: Coroutine[Any, Any, None]) -> None:
    asyncio.run(scenario)


def test_pipelined_requests_are_answered_in_order(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with anonymous(tmp_path) as harness:
            client = await harness.connect()
            await client.send_bytes(b"".join(
                request_frame(api_key, version, {}, correlation_id)
                for api_key, version, correlation_id in ((3, 12, 11), (18, 3, 12), (3, 1, 13))))
            first = await client.answer(3, 12)
            second = await client.answer(18, 3)
            third = await client.answer(3, 1)
            assert [first[0], second[0], third[0]] == [11, 12, 13]
            assert first[1]["brokers"] == third[1]["brokers"] == [
                {"node_id": 1, "host": "b1.test", "port": 9092, "rack": None}]
            assert second[1]["error_code"] == 0

    run(scenario())


def test_a_frame_of_the_largest_size_is_read(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with anonymous(tmp_path) as harness:
            client = await harness.connect()
            whole = request_frame(3, 12, {"topics": None}, 5)
            padding = b"\x00" * (LIMITS.max_frame_bytes - (len(whole) - 4))
            await client.send_bytes(request_frame(3, 12, {"topics": None}, 5, trailing=padding))
            assert (await client.answer(3, 12))[0] == 5

    run(scenario())


@pytest.mark.parametrize("size", [LIMITS.max_frame_bytes + 1, 2**31 - 1, -1])
def test_an_oversize_frame_closes_the_connection_before_its_bytes_come(tmp_path: Path,
                                                                      size: int) -> None:
    # The frame deadline is long: a server that waited for the frame's bytes would not close.
    limits = dataclasses.replace(LIMITS, idle_timeout=30, frame_timeout=30)

    async def scenario() -> None:
        async with anonymous(tmp_path, limits=limits) as harness:
            client = await harness.connect()
            await client.send_bytes(size.to_bytes(4, "big", signed=True))
            started = time.monotonic()
            assert await client.closed(within=2.0)
            assert time.monotonic() - started < 1.0

    run(scenario())


def test_an_idle_connection_is_closed_after_the_idle_timeout(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with anonymous(tmp_path) as harness:
            client = await harness.connect()
            assert (await client.call(3, 1, {}))["controller_id"] == 1
            started = time.monotonic()
            assert not await client.closed(within=0.3)
            assert await client.closed(within=2.0)
            assert 0.4 <= time.monotonic() - started < 1.5

    run(scenario())


def test_a_connection_that_does_not_authenticate_in_time_is_closed_though_busy(
        tmp_path: Path) -> None:
    # Idle never: an ApiVersions every 0.15 s. The SASL deadline counts from the connect.
    limits = dataclasses.replace(LIMITS, idle_timeout=30, sasl_timeout=0.6)

    async def scenario() -> None:
        async with serving(tmp_path, limits=limits) as harness:
            client = await harness.connect()
            started = time.monotonic()
            answered = 0
            for _ in range(20):
                try:
                    await client.call(18, 3, {})
                except AssertionError:
                    break  # the server closed instead of answering
                answered += 1
                await asyncio.sleep(0.15)
            assert answered >= 2
            assert 0.5 <= time.monotonic() - started < 1.5
            assert await client.closed(within=1.0)

    run(scenario())


def test_the_sasl_deadline_ends_once_authenticated(tmp_path: Path) -> None:
    limits = dataclasses.replace(LIMITS, idle_timeout=30, sasl_timeout=0.5)

    async def scenario() -> None:
        async with serving(tmp_path, limits=limits) as harness:
            client = await harness.connect()
            await client.authenticate()
            await asyncio.sleep(0.7)
            assert (await client.call(3, 4, {"topics": None}))["cluster_id"] == "c"

    run(scenario())


def test_a_frame_that_does_not_arrive_whole_in_time_closes_the_connection(
        tmp_path: Path) -> None:
    limits = dataclasses.replace(LIMITS, idle_timeout=30, frame_timeout=0.5)

    async def scenario() -> None:
        async with anonymous(tmp_path, limits=limits) as harness:
            client = await harness.connect()
            frame = request_frame(3, 12, {"topics": None}, 1)
            await client.send_bytes(frame[:10])
            started = time.monotonic()
            assert not await client.closed(within=0.3)
            assert await client.closed(within=2.0)
            assert 0.4 <= time.monotonic() - started < 1.5

    run(scenario())


@pytest.mark.parametrize("payload", [
    b"\x00\x03\x00",                                       # shorter than a header
    b"\x00\x03\x00\x0c\x00\x00\x00\x01\xff\xff",          # a header that ends early
    encode("RequestHeader", 2, {"request_api_key": 3, "request_api_version": 12,
                                "correlation_id": 1, "client_id": "c"}) + b"\x05\xff",
    encode("RequestHeader", 1, {"request_api_key": 19, "request_api_version": 7,
                                "correlation_id": 1, "client_id": "c"}),  # not served here
    encode("RequestHeader", 2, {"request_api_key": 3, "request_api_version": 13,
                                "correlation_id": 1, "client_id": "c"}) + b"\x00\x00",
    encode("RequestHeader", 1, {"request_api_key": 4242, "request_api_version": 0,
                                "correlation_id": 1, "client_id": "c"}),  # no such API
])
def test_a_bad_request_closes_only_its_connection(tmp_path: Path, payload: bytes,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        async with anonymous(tmp_path) as harness:
            good = await harness.connect()
            bad = await harness.connect()
            await bad.send_bytes(sized(payload))
            assert await bad.read_frame() is None
            assert (await good.call(3, 12, {"topics": None}))["cluster_id"] == "c"

    with caplog.at_level(logging.INFO, logger="chunkraft.kafka.server.connection"):
        run(scenario())
    assert any("closed" in record.getMessage() for record in caplog.records)


def test_bytes_left_after_a_body_are_accepted(tmp_path: Path) -> None:
    # librdkafka 2.16 sends three bytes after its Metadata v12 of every topic.
    recorder = Recorder()

    async def scenario() -> None:
        async with anonymous(tmp_path, recorder=recorder) as harness:
            client = await harness.connect()
            await client.send(3, 12, {"topics": None}, trailing=b"\x00\x00\x00")
            correlation_id, body = await client.answer(3, 12)
            assert correlation_id == 1 and body["brokers"] == METADATA["brokers"]

    run(scenario())
    assert recorder.bodies[0]["topics"] is None


def test_the_body_reaches_the_handler_decoded(tmp_path: Path) -> None:
    recorder = Recorder()

    async def scenario() -> None:
        async with anonymous(tmp_path, recorder=recorder) as harness:
            client = await harness.connect()
            await client.call(3, 12, {"topics": [{"name": "orders", "topic_id": None}],
                                      "include_topic_authorized_operations": True})

    run(scenario())
    body = recorder.bodies[0]
    assert [topic["name"] for topic in body["topics"]] == ["orders"]
    assert body["include_topic_authorized_operations"] is True


def test_a_handler_exception_closes_only_its_connection(tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        async with anonymous(tmp_path) as harness:
            good = await harness.connect()
            bad = await harness.connect()
            await bad.send(60, 1, {})
            assert await bad.read_frame() is None
            assert (await good.call(3, 12, {"topics": None}))["cluster_id"] == "c"
            # The server still takes new connections.
            again = await harness.connect()
            assert (await again.call(3, 1, {"topics": []}))["controller_id"] == 1

    with caplog.at_level(logging.ERROR, logger="chunkraft.kafka.server.connection"):
        run(scenario())
    failures = [r for r in caplog.records if r.levelno == logging.ERROR
                and r.name == "chunkraft.kafka.server.connection"]
    assert len(failures) == 1 and failures[0].exc_info is not None
    assert "a handler bug" in str(failures[0].exc_info[1])


def test_a_client_that_leaves_inside_a_frame_does_not_disturb_the_server(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        async with anonymous(tmp_path) as harness:
            leaving = await harness.connect()
            await leaving.send_bytes(b"\x00\x00")
            await leaving.close()
            other = await harness.connect()
            assert (await other.call(3, 12, {"topics": None}))["cluster_id"] == "c"
            for _ in range(50):
                if not harness.server.open_connections:
                    break
                await asyncio.sleep(0.02)
            assert not harness.server.open_connections

    run(scenario())


def test_default_limits_are_kafkas_frame_size_idle_and_sasl_timeouts() -> None:
    limits = ConnectionLimits()
    assert limits.max_frame_bytes == 8 * 1024 * 1024
    assert (limits.idle_timeout, limits.sasl_timeout) == (600.0, 10.0)


class _Clock:
    """connection.py's ``time`` module: monotonic() gives the next of ``readings``."""

    def __init__(self, *readings: float) -> None:
        self.readings = list(readings)

    def monotonic(self) -> float:
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]


class _Writer:
    """The little of a StreamWriter a connection that only reads uses."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None


def test_the_sasl_deadline_passing_inside_a_frame_leaks_no_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The frame's size came just before the SASL deadline; its bytes are due after it. The
    # connection closes, and must not leave a read it created but never awaited behind (a
    # "coroutine was never awaited" RuntimeWarning, an error under this suite's -W error).
    # started at 0; the size is read at 0.1 (0.4 s left); the body at 1.0 (deadline passed).
    monkeypatch.setattr(connection, "time", _Clock(0.0, 0.1, 1.0))

    async def scenario() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data((100).to_bytes(4, "big"))
        writer = _Writer()
        session = KafkaSession("SASL_PLAINTEXT", "SASL_PLAINTEXT", "10.0.0.7")
        served = connection.KafkaConnection(
            reader, cast(asyncio.StreamWriter, writer), {}, session, LIMITS)
        await served.serve()
        assert writer.closed

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(scenario())
        gc.collect()
    leaked = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert leaked == []
