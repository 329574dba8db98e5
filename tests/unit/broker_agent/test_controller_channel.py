"""ControllerChannel over httpx.MockTransport: retries on the next controller with the same
Idempotency-Key, gives up with ControllerRpcError, keeps the controller that answered."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
import pytest

from chunkraft.broker_agent.controller_channel import ControllerChannel, ControllerRpcError
from chunkraft.error_codes import Errors

URLS = ["http://c1", "http://c2", "http://c3"]

Handler = Callable[[httpx.Request], httpx.Response]


def channel(handler: Handler, **kwargs: float) -> ControllerChannel:
    return ControllerChannel(URLS, token="crt_t", transport=httpx.MockTransport(handler),
                             **kwargs)


def run(coroutine: object) -> object:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


def test_a_dead_controller_and_a_421_are_retried_with_one_key() -> None:
    seen: list[tuple[str, str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.host, request.headers["idempotency-key"],
                     request.headers["authorization"]))
        if request.url.host == "c1":
            raise httpx.ConnectError("refused")
        if request.url.host == "c2":
            return httpx.Response(421, json={"error_code": 41, "message": "not the leader"})
        return httpx.Response(200, json={"ok": True}, headers={"X-Metadata-Offset": "42"})

    async def scenario() -> tuple[dict[str, object], dict[str, object], ControllerChannel]:
        rpc = channel(handler)
        first = await rpc.call("/controller/v1/broker-heartbeat", {"broker_id": 1})
        second = await rpc.call("/controller/v1/broker-heartbeat", {"broker_id": 1})
        await rpc.aclose()
        return first, second, rpc

    first, second, rpc = run(scenario())  # type: ignore[misc]
    assert first == second == {"ok": True}
    assert [host for host, _, _ in seen] == ["c1", "c2", "c3", "c3"]  # then it stays on c3
    assert len({key for _, key, _ in seen[:3]}) == 1  # one key across the retries
    assert seen[3][1] != seen[0][1]  # a new call, a new key
    assert all(auth == "Bearer crt_t" for _, _, auth in seen)
    assert rpc.last_offset == 42 and rpc.retries == 2


def test_a_client_error_is_raised_at_once() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(json.loads(request.content))
        return httpx.Response(403, json={"error_code": Errors.CLUSTER_AUTHORIZATION_FAILED.code,
                                         "message": "no"})

    async def scenario() -> None:
        rpc = channel(handler)
        try:
            await rpc.call("/controller/v1/broker-registration", {"broker_id": 0})
        finally:
            await rpc.aclose()

    with pytest.raises(ControllerRpcError) as raised:
        run(scenario())
    assert raised.value.status == 403 and raised.value.error is Errors.CLUSTER_AUTHORIZATION_FAILED
    assert calls == [{"broker_id": 0}]


def test_it_gives_up_after_retry_for() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("down")

    async def scenario() -> None:
        rpc = channel(handler, retry_for=0.3)
        try:
            await rpc.call("/controller/v1/broker-heartbeat", {})
        finally:
            await rpc.aclose()

    with pytest.raises(ControllerRpcError) as raised:
        run(scenario())
    assert raised.value.status == 503 and raised.value.error is Errors.NETWORK_EXCEPTION
    assert "no controller answered" in str(raised.value)


def test_the_last_retriable_status_is_what_it_gives_up_with() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={"error_code": Errors.NOT_CONTROLLER.code,
                                         "message": "no leader"})

    async def scenario() -> None:
        rpc = channel(handler, retry_for=0.2)
        try:
            await rpc.call("/controller/v1/alter-partition", {})
        finally:
            await rpc.aclose()

    with pytest.raises(ControllerRpcError) as raised:
        run(scenario())
    assert raised.value.status == 503 and raised.value.error is Errors.NOT_CONTROLLER


def test_prefer_moves_the_next_call_to_a_known_url() -> None:
    hosts: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        hosts.append(request.url.host)
        return httpx.Response(200, json={})

    async def scenario() -> None:
        rpc = channel(handler)
        rpc.prefer("http://c3")
        await rpc.call("/controller/v1/broker-heartbeat", {})
        rpc.prefer("http://elsewhere")  # not a controller of this channel: ignored
        await rpc.call("/controller/v1/broker-heartbeat", {})
        await rpc.aclose()

    run(scenario())
    assert hosts == ["c3", "c3"]


def test_a_shared_preference_points_the_other_channel_at_the_same_controller() -> None:
    main = ControllerChannel(["http://c1", "http://c2", "http://c3"])
    heartbeats = ControllerChannel(["http://c1", "http://c2", "http://c3"])
    main.share_preference(heartbeats)
    main.prefer("http://c3")
    assert heartbeats.preferred_url == "http://c3"
    main.prefer("http://elsewhere")  # not one of the URLs: ignored by both
    assert (main.preferred_url, heartbeats.preferred_url) == ("http://c3", "http://c3")
