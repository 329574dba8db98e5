"""KafkaServer (chunkraft.kafka.server.listener): its listeners, handler table, the count of
connections per address, who a connection without SASL is, and close()."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import ssl
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from chunkraft.controller.kafka_listeners import KafkaListener
from chunkraft.kafka.server.listener import KafkaServer
from chunkraft.kafka.server.sasl import KafkaAuthenticator
from chunkraft.security.principal import Principal
from tests.unit.kafka.server.support import (
    LIMITS,
    PLAIN_LISTENER,
    SASL_LISTENER,
    Recorder,
    anonymous,
    serving,
)


def run(scenario: Coroutine[Any, Any, None]) -> None:
    asyncio.run(scenario)


async def until(condition: Callable[[], bool], within: float = 2.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the condition did not come true in time"
        await asyncio.sleep(0.01)


def test_every_listener_binds_a_port_of_its_own(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path, listeners=(SASL_LISTENER, PLAIN_LISTENER),
                           allow_anonymous=True) as harness:
            bound = harness.server.bound
            assert set(bound) == {"SASL_PLAINTEXT", "PLAINTEXT"}
            assert all(port > 0 for port in bound.values())
            assert bound["SASL_PLAINTEXT"] != bound["PLAINTEXT"]
            sasl = await harness.connect("SASL_PLAINTEXT")
            await sasl.authenticate()
            plain = await harness.connect("PLAINTEXT")
            assert (await plain.call(3, 1, {}))["controller_id"] == 1

    run(scenario())


def test_api_versions_and_sasl_join_the_handler_table() -> None:
    handlers = Recorder().handlers()
    server = KafkaServer((SASL_LISTENER,), handlers, KafkaAuthenticator(None))
    assert set(server.handlers) == {3, 60, 17000, 17, 18, 36}
    assert server.handlers[3] is handlers[0]
    assert {key for key, handler in server.handlers.items()
            if handler.before_authentication} == {17, 18, 36}


def test_a_tls_listener_needs_a_tls_context() -> None:
    listener = KafkaListener("SASL_SSL", "SASL_SSL", "127.0.0.1", 0)
    with pytest.raises(ValueError, match=r"SASL_SSL://127.0.0.1:0 needs TLS"):
        KafkaServer((listener,), [], KafkaAuthenticator(None))
    KafkaServer((listener,), [], KafkaAuthenticator(None),
                tls=ssl.create_default_context(ssl.Purpose.CLIENT_AUTH))


def test_connections_over_the_per_address_limit_are_closed_at_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        async with serving(tmp_path, max_connections_per_ip=2) as harness:
            server = harness.server
            first, second = await harness.connect(), await harness.connect()
            for client in (first, second):  # both accepted and counted
                assert (await client.call(18, 3, {}))["error_code"] == 0
            assert server.open_connections["127.0.0.1"] == 2
            for _ in range(2):
                over = await harness.connect()
                assert await over.closed(within=1.0)
            assert server.refused_connections == 2
            # One closes: a new connection is counted in its place.
            await first.close()
            await until(lambda: server.open_connections["127.0.0.1"] == 1)
            third = await harness.connect()
            assert (await third.call(18, 3, {}))["error_code"] == 0
            assert server.open_connections["127.0.0.1"] == 2

    with caplog.at_level(logging.WARNING, logger="chunkraft.kafka.server.listener"):
        run(scenario())
    refusals = [r for r in caplog.records if "max.connections.per.ip" in r.getMessage()]
    assert len(refusals) == 1  # at most one line a minute per address


def test_the_count_goes_back_to_zero(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with anonymous(tmp_path) as harness:
            clients = [await harness.connect() for _ in range(3)]
            for client in clients:
                await client.call(3, 1, {})
            assert harness.server.open_connections == {"127.0.0.1": 3}
            await harness.close_clients()
            await until(lambda: not harness.server.open_connections)
            assert "127.0.0.1" not in harness.server.open_connections

    run(scenario())


def test_without_sasl_a_connection_is_anonymous_when_allowed(tmp_path: Path) -> None:
    recorder = Recorder()

    async def scenario() -> None:
        async with anonymous(tmp_path, recorder=recorder) as harness:
            client = await harness.connect()
            await client.call(3, 12, {"topics": None})

    run(scenario())
    (session,) = recorder.sessions
    assert session.principal == Principal("User:ANONYMOUS", "127.0.0.1")
    assert (session.token, session.listener, session.security_protocol) == (
        None, "PLAINTEXT", "PLAINTEXT")


def test_without_sasl_or_anonymity_a_connection_is_closed_uncounted(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path, listeners=(PLAIN_LISTENER,)) as harness:
            client = await harness.connect()
            assert await client.closed(within=1.0)
            assert not harness.server.open_connections
            assert harness.server.refused_connections == 0

    run(scenario())


def test_close_ends_open_connections(tmp_path: Path) -> None:
    limits = dataclasses.replace(LIMITS, idle_timeout=30, sasl_timeout=30)

    async def scenario() -> None:
        async with serving(tmp_path, limits=limits) as harness:
            idle = await harness.connect()
            busy = await harness.connect()
            await busy.authenticate()
            started = time.monotonic()
            await harness.server.close()
            assert time.monotonic() - started < 2.0
            assert await idle.closed(within=1.0) and await busy.closed(within=1.0)
            with pytest.raises(OSError):
                await harness.connect()

    run(scenario())


def test_close_with_open_connections_logs_no_error(tmp_path: Path,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    # Closing a server is routine (every stop of a node): its open connections end quietly.
    limits = dataclasses.replace(LIMITS, idle_timeout=30, sasl_timeout=30)

    async def scenario() -> None:
        async with serving(tmp_path, limits=limits) as harness:
            client = await harness.connect()
            await client.call(18, 3, {})
            await harness.server.close()
            assert await client.closed(within=1.0)

    with caplog.at_level(logging.DEBUG):
        run(scenario())
    errors = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


def test_a_second_close_is_harmless(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            await harness.server.close()
        assert harness.server.open_connections == {}

    run(scenario())
