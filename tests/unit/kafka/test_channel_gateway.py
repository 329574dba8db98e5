"""ChannelGateway (chunkraft.kafka.channel_gateway): a broker forwards admin route calls to
the controllers over a ControllerChannel (on httpx.MockTransport) with the client's own token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

import httpx
import pytest

from chunkraft.broker_agent.controller_channel import ControllerChannel
from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.channel_gateway import ChannelGateway
from chunkraft.kafka.server.requests import KafkaSession
from chunkraft.security.principal import Principal

URLS = ["http://c1", "http://c2"]
ALICE = KafkaSession("SASL_PLAINTEXT", "SASL_PLAINTEXT", "10.0.0.7",
                     principal=Principal("User:alice", "10.0.0.7"), token="crt_alice",
                     mechanism="PLAIN")
CERTIFIED = KafkaSession("SSL", "SSL", "10.0.0.8", principal=Principal("User:carol", "10.0.0.8"))

Handler = Callable[[httpx.Request], httpx.Response]


def exchange(handler: Handler, call: Callable[[ChannelGateway], Coroutine[Any, Any, Any]],
             **channel_options: Any) -> Any:
    async def scenario() -> Any:
        channel = ControllerChannel(URLS, token="crt_broker",
                                    transport=httpx.MockTransport(handler), **channel_options)
        try:
            return await call(ChannelGateway(channel))
        finally:
            await channel.aclose()

    return asyncio.run(scenario())


def recording(status: int, payload: Any, seen: list[httpx.Request]) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(status, json=payload)

    return handler


@pytest.mark.parametrize("method", ["write", "read"])
def test_the_clients_token_is_sent_instead_of_the_brokers(method: str) -> None:
    seen: list[httpx.Request] = []
    body = {"topics": [{"name": "orders", "num_partitions": 3}]}
    answer = exchange(recording(200, {"topics": []}, seen),
                      lambda gateway: getattr(gateway, method)(
                          "/controller/v1/create-topics", body, ALICE))
    assert answer == {"topics": []}
    (request,) = seen
    assert request.headers.get_list("authorization") == ["Bearer crt_alice"]
    assert request.method == "POST"
    # A read asks for the channel's newest offset (read your writes; -1 before any answer).
    query = "?min_offset=-1&wait_ms=5000" if method == "read" else ""
    assert str(request.url) == f"http://c1/controller/v1/create-topics{query}"
    assert json.loads(request.content) == body
    assert request.headers["idempotency-key"]


def test_a_session_without_a_token_is_refused_and_nothing_is_sent() -> None:
    seen: list[httpx.Request] = []
    with pytest.raises(GatewayError) as caught:
        exchange(recording(200, {}, seen),
                 lambda gateway: gateway.write("/controller/v1/create-topics", {}, CERTIFIED))
    assert seen == []
    assert (caught.value.status, caught.value.error) == (
        403, Errors.CLUSTER_AUTHORIZATION_FAILED)
    assert "User:carol" in str(caught.value.message)
    assert "SASL" in str(caught.value.message)


@pytest.mark.parametrize(("status", "payload", "error"), [
    (403, {"error_code": 31, "error_name": "CLUSTER_AUTHORIZATION_FAILED",
           "message": "User:alice may not ALTER the cluster"},
     Errors.CLUSTER_AUTHORIZATION_FAILED),
    (400, {"error_code": 42, "message": "too many topics"}, Errors.INVALID_REQUEST),
    (401, {"error_name": "SASL_AUTHENTICATION_FAILED", "message": "bad token"},
     Errors.SASL_AUTHENTICATION_FAILED),
])
def test_an_error_body_becomes_a_gateway_error_with_its_kafka_error(
        status: int, payload: dict[str, Any], error: Errors) -> None:
    seen: list[httpx.Request] = []
    with pytest.raises(GatewayError) as caught:
        exchange(recording(status, payload, seen),
                 lambda gateway: gateway.write("/controller/v1/create-acls", {}, ALICE))
    assert len(seen) == 1  # a 4xx is not retried on another controller
    assert (caught.value.status, caught.value.error) == (status, error)
    assert caught.value.message == payload["message"]


def test_no_controller_answering_is_a_network_exception() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused")

    with pytest.raises(GatewayError) as caught:
        exchange(handler, lambda gateway: gateway.write("/controller/v1/create-topics", {},
                                                        ALICE), retry_for=0.05)
    assert (caught.value.status, caught.value.error) == (503, Errors.NETWORK_EXCEPTION)


def test_a_retried_call_keeps_the_clients_token() -> None:
    seen: list[tuple[str, str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.host, request.headers["authorization"]))
        if request.url.host == "c1":
            return httpx.Response(503, json={"error_code": 41, "message": "no leader"})
        return httpx.Response(200, json={"ok": True})

    assert exchange(handler, lambda gateway: gateway.write("/controller/v1/create-topics", {},
                                                           ALICE)) == {"ok": True}
    assert seen == [("c1", "Bearer crt_alice"), ("c2", "Bearer crt_alice")]
