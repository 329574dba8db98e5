"""SaslHandshake and SaslAuthenticate (chunkraft.kafka.server.sasl_handlers) on a real
KafkaServer: the v1 exchange, v0's bare token, the failures Kafka answers and when the
connection closes."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from chunkraft.security.principal import Principal
from tests.unit.kafka.server.support import (
    LIMITS,
    PLAIN,
    TOKEN,
    Recorder,
    anonymous,
    serving,
    sized,
)

SASL_AUTHENTICATION_FAILED = 58
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
BEARER = b"n,,\x01auth=Bearer " + TOKEN.encode() + b"\x01\x01"


def run(scenario: Coroutine[Any, Any, None]) -> None:
    asyncio.run(scenario)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_the_v1_exchange_then_metadata_as_the_principal(tmp_path: Path, version: int) -> None:
    recorder = Recorder()

    async def scenario() -> None:
        async with serving(tmp_path, recorder=recorder) as harness:
            client = await harness.connect()
            handshake = await client.call(17, 1, {"mechanism": "PLAIN"})
            assert handshake == {"error_code": 0, "mechanisms": ["PLAIN", "OAUTHBEARER"]}
            answer = await client.call(36, version, {"auth_bytes": PLAIN})
            assert answer["error_code"] == 0 and answer["auth_bytes"] == b""
            assert (await client.call(3, 12, {"topics": None}))["cluster_id"] == "c"

    run(scenario())
    (session,) = recorder.sessions
    assert session.principal == Principal("User:alice", "127.0.0.1")
    assert (session.token, session.mechanism) == (TOKEN, "PLAIN")


def test_oauthbearer_then_metadata(tmp_path: Path) -> None:
    recorder = Recorder()

    async def scenario() -> None:
        async with serving(tmp_path, recorder=recorder) as harness:
            client = await harness.connect()
            await client.authenticate(BEARER, "OAUTHBEARER")
            await client.call(3, 1, {"topics": None})

    run(scenario())
    session = recorder.sessions[0]
    assert (session.principal, session.token, session.mechanism) == (
        Principal("User:alice", "127.0.0.1"), TOKEN, "OAUTHBEARER")


def test_handshake_v0_then_a_bare_token_frame(tmp_path: Path) -> None:
    recorder = Recorder()

    async def scenario() -> None:
        async with serving(tmp_path, recorder=recorder) as harness:
            client = await harness.connect()
            assert (await client.call(17, 0, {"mechanism": "PLAIN"}))["error_code"] == 0
            await client.send_bytes(sized(PLAIN))  # no Kafka header: the SASL token alone
            assert await client.read_frame() == b""  # the bare answer: an empty frame
            assert (await client.call(3, 12, {"topics": None}))["controller_id"] == 1

    run(scenario())
    assert recorder.sessions[0].principal == Principal("User:alice", "127.0.0.1")


def test_a_wrong_bare_token_closes_the_connection(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            client = await harness.connect()
            await client.call(17, 0, {"mechanism": "PLAIN"})
            await client.send_bytes(sized(b"\x00alice\x00crt_wrong"))
            assert await client.read_frame() is None

    run(scenario())


@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_wrong_password_answers_58_then_closes(tmp_path: Path, version: int) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            client = await harness.connect()
            await client.call(17, 1, {"mechanism": "PLAIN"})
            answer = await client.call(36, version, {"auth_bytes": b"\x00alice\x00crt_wrong"})
            assert answer["error_code"] == SASL_AUTHENTICATION_FAILED
            assert "Authentication failed" in answer["error_message"]
            assert "crt_wrong" not in answer["error_message"]
            assert await client.closed()

    run(scenario())


def test_a_failed_authentication_closes_only_after_its_delay(tmp_path: Path) -> None:
    """Kafka's connection.failed.authentication.delay.ms: the answer first, the close after the
    delay, so a client reads SASL_AUTHENTICATION_FAILED before it sees the connection end."""
    limits = dataclasses.replace(LIMITS, failed_authentication_delay=0.3)

    async def scenario() -> None:
        async with serving(tmp_path, limits=limits) as harness:
            client = await harness.connect()
            await client.call(17, 1, {"mechanism": "PLAIN"})
            answer = await client.call(36, 2, {"auth_bytes": b"\x00alice\x00crt_wrong"})
            assert answer["error_code"] == SASL_AUTHENTICATION_FAILED
            assert not await client.closed(within=0.15)  # still open within the delay
            assert await client.closed(within=2.0)

    run(scenario())


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "OAUTHBEARER"])  # the second known,
def test_an_unknown_mechanism_answers_33_with_the_mechanisms_then_closes(  # not offered
        tmp_path: Path, mechanism: str) -> None:
    async def scenario() -> None:
        async with serving(tmp_path, mechanisms=("PLAIN",)) as harness:
            client = await harness.connect()
            for version in (1, 0):
                if version == 0:
                    client = await harness.connect()
                answer = await client.call(17, version, {"mechanism": mechanism})
                assert answer == {"error_code": UNSUPPORTED_SASL_MECHANISM,
                                  "mechanisms": ["PLAIN"]}
                assert await client.closed()

    run(scenario())


def test_a_second_handshake_answers_34(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            client = await harness.connect()
            assert (await client.call(17, 1, {"mechanism": "PLAIN"}))["error_code"] == 0
            again = await client.call(17, 1, {"mechanism": "OAUTHBEARER"})
            assert again["error_code"] == ILLEGAL_SASL_STATE
            # The first handshake's mechanism still holds.
            assert (await client.call(36, 2, {"auth_bytes": PLAIN}))["error_code"] == 0
            after = await client.call(17, 1, {"mechanism": "PLAIN"})
            assert after["error_code"] == ILLEGAL_SASL_STATE  # already authenticated

    run(scenario())


def test_authenticate_without_a_handshake_answers_34(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            client = await harness.connect()
            answer = await client.call(36, 2, {"auth_bytes": PLAIN})
            assert answer["error_code"] == ILLEGAL_SASL_STATE
            assert answer["error_message"]
            # Still not authenticated: anything but ApiVersions and SASL closes it.
            await client.send(3, 12, {"topics": None})
            assert await client.read_frame() is None

    run(scenario())


def test_authenticate_again_after_success_answers_34(tmp_path: Path) -> None:
    recorder = Recorder()

    async def scenario() -> None:
        async with serving(tmp_path, recorder=recorder) as harness:
            client = await harness.connect()
            await client.authenticate()
            again = await client.call(36, 2, {"auth_bytes": b"\x00bob\x00crt_bob"})
            assert again["error_code"] == ILLEGAL_SASL_STATE
            await client.call(3, 12, {"topics": None})

    run(scenario())
    assert recorder.sessions[0].principal == Principal("User:alice", "127.0.0.1")


def test_a_handshake_on_a_listener_without_sasl_answers_34(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with anonymous(tmp_path) as harness:
            client = await harness.connect()
            answer = await client.call(17, 1, {"mechanism": "PLAIN"})
            assert answer["error_code"] == ILLEGAL_SASL_STATE

    run(scenario())


@pytest.mark.parametrize(("api_key", "version"), [(3, 12), (60, 1), (3, 0)])
def test_an_api_other_than_sasl_before_authentication_closes(tmp_path: Path, api_key: int,
                                                             version: int) -> None:
    recorder = Recorder()

    async def scenario() -> None:
        async with serving(tmp_path, recorder=recorder) as harness:
            client = await harness.connect()
            await client.call(17, 1, {"mechanism": "PLAIN"})  # a handshake is not enough
            await client.send(api_key, version, {})
            assert await client.read_frame() is None

    run(scenario())
    assert recorder.sessions == []  # the handler never ran


def test_the_session_lifetime_is_zero_from_v1(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            client = await harness.connect()
            await client.call(17, 1, {"mechanism": "PLAIN"})
            answer = await client.call(36, 1, {"auth_bytes": PLAIN})
            assert answer["session_lifetime_ms"] == 0  # no re-authentication (KIP-368)

    run(scenario())
