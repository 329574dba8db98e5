"""ApiVersions (chunkraft.kafka.server.api_versions) on a real KafkaServer: exactly the handler
table's ranges, chunkraft's private keys only on request, UNSUPPORTED_VERSION at v0 for a
version it does not know, and answers a stock client's codec reads."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from chunkraft.kafka.codec.messages import encode
from chunkraft.kafka.server.api_versions import API_VERSIONS_MAX
from tests.unit.kafka.server.support import Recorder, serving, sized

# The fake table (Metadata 0-12, DescribeCluster 0-1, private CreateChunks 0) and what the
# server adds: SaslHandshake 0-1, SaslAuthenticate 0-2.
PUBLIC = {3: (0, 12), 17: (0, 1), 36: (0, 2), 60: (0, 1)}
PRIVATE = {17000: (0, 0)}


def run(scenario: Coroutine[Any, Any, None]) -> None:
    asyncio.run(scenario)


def ranges(answer: dict[str, Any]) -> dict[int, tuple[int, int]]:
    return {key["api_key"]: (key["min_version"], key["max_version"])
            for key in answer["api_keys"]}


def without_api_versions(found: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    return {key: span for key, span in found.items() if key != 18}


@pytest.mark.parametrize("version", range(API_VERSIONS_MAX + 1))
def test_every_version_lists_the_handler_tables_ranges(tmp_path: Path, version: int) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            client = await harness.connect()  # not authenticated: ApiVersions is served
            answer = await client.call(18, version, {})
            assert answer["error_code"] == 0
            found = ranges(answer)
            assert 18 in found
            assert without_api_versions(found) == PUBLIC
            assert [key["api_key"] for key in answer["api_keys"]] == sorted(found)

    run(scenario())


def test_api_versions_advertises_the_versions_it_serves(tmp_path: Path) -> None:
    # ApiVersions 0-4: a client picks min(its max, ours); an advertised 32767 makes a newer
    # client send a version it is then told is unsupported, with the same 32767 to retry at.
    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            client = await harness.connect()
            assert ranges(await client.call(18, 3, {}))[18] == (0, API_VERSIONS_MAX)

    run(scenario())


def test_private_keys_only_for_a_client_that_asks(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            client = await harness.connect()
            assert 17000 not in ranges(await client.call(18, 3, {}))
            asked = ranges(await client.call(18, 3, {"include_private_apis": True}))
            assert without_api_versions(asked) == PUBLIC | PRIVATE
            # Asked once, the connection keeps them; another connection does not see them.
            assert 17000 in ranges(await client.call(18, 4, {}))
            other = await harness.connect()
            assert 17000 not in ranges(await other.call(18, 4, {}))

    run(scenario())


def test_the_private_flag_is_a_v3_field(tmp_path: Path) -> None:
    # Below v3 the request has no tagged fields: the flag cannot be sent, nor read.
    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            client = await harness.connect()
            assert 17000 not in ranges(await client.call(18, 2, {"include_private_apis": True}))

    run(scenario())


def _api_versions_frame(version: int, correlation_id: int, body: bytes) -> bytes:
    header = encode("RequestHeader", 2, {"request_api_key": 18, "request_api_version": version,
                                         "correlation_id": correlation_id,
                                         "client_id": "future-client"})
    return sized(header + body)


@pytest.mark.parametrize("version", [API_VERSIONS_MAX + 1, 99, 2**15 - 1])
def test_an_unknown_version_answers_unsupported_version_at_v0(tmp_path: Path,
                                                             version: int) -> None:
    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            client = await harness.connect()
            # A body this codec cannot read: a version it does not know.
            await client.send_bytes(_api_versions_frame(version, 77, b"\x0bfuture\x021\xff\x00"))
            correlation_id, answer = await client.answer(18, 0)  # header v0, body v0
            assert correlation_id == 77
            assert answer["error_code"] == 35
            assert without_api_versions(ranges(answer)) == PUBLIC
            # The connection goes on: the client retries at a version it found.
            assert (await client.call(18, 3, {}))["error_code"] == 0

    run(scenario())


def test_the_client_software_is_kept_in_the_session(tmp_path: Path) -> None:
    recorder = Recorder()

    async def scenario() -> None:
        async with serving(tmp_path, recorder=recorder) as harness:
            client = await harness.connect()
            await client.call(18, 3, {"client_software_name": "librdkafka",
                                      "client_software_version": "2.16.2"})
            await client.authenticate()
            await client.call(3, 12, {"topics": None})

    run(scenario())
    assert recorder.sessions[0].client_software == ("librdkafka", "2.16.2")


def test_a_stock_codec_reads_every_version_of_the_answer(tmp_path: Path) -> None:
    # kafka-python's ApiVersionsResponse reads the frames as a client would.
    classes = importlib.import_module("tests.support.kafka_messages").kafka_python_classes()
    response_class = classes["ApiVersionsResponse"]
    frames: dict[int, bytes] = {}

    async def scenario() -> None:
        async with serving(tmp_path) as harness:
            client = await harness.connect()
            for version in range(API_VERSIONS_MAX + 1):
                await client.send(18, version, {})
                frame = await client.read_frame()
                assert frame is not None
                frames[version] = frame

    run(scenario())
    for version, frame in frames.items():
        # The response header is v0 always (4 bytes of correlation id), then the body.
        decoded = response_class.decode(frame[4:], version=version)
        assert decoded.error_code == 0
        assert {key.api_key for key in decoded.api_keys} == {3, 17, 18, 36, 60}
