"""InitProducerId 0-4 (chunkraft.kafka.producer_id_handler) over a fake gateway standing in for
the broker's /broker/v1/init-producer-id route: fields moved by name, a refusal as the error
code, and every version through both codecs."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.codec.messages import RequestHeader, decode, encode
from chunkraft.kafka.producer_id_handler import (
    INIT_PRODUCER_ID_KEY,
    ROUTE,
    init_producer_id_handler,
)
from chunkraft.kafka.server.requests import KafkaRequest
from tests.unit.kafka.txn.support import SESSION, FakeGateway


def handle(gateway: FakeGateway, version: int, body: dict[str, Any]) -> dict[str, Any]:
    wire = encode("InitProducerIdRequest", version, body)
    request = KafkaRequest(RequestHeader(INIT_PRODUCER_ID_KEY, version, 3, "client", 0),
                           decode("InitProducerIdRequest", version, wire), SESSION)
    return served(gateway, request)


def served(gateway: FakeGateway, request: KafkaRequest) -> dict[str, Any]:
    handler = init_producer_id_handler(gateway)

    async def call() -> dict[str, Any]:
        answer = await handler.handle(request)
        assert isinstance(answer, dict)
        return answer

    return asyncio.run(call())


def test_the_handler_serves_versions_0_to_4_after_authentication() -> None:
    handler = init_producer_id_handler(FakeGateway({}))
    assert (handler.api_key, handler.min_version, handler.max_version) == (22, 0, 4)
    assert not handler.private and not handler.before_authentication


def test_an_idempotent_producer_gets_the_routes_id() -> None:
    gateway = FakeGateway({"error_code": 0, "producer_id": 4000, "producer_epoch": 0})
    answer = handle(gateway, 4, {"transactional_id": None, "transaction_timeout_ms": 30_000})
    assert answer == {"throttle_time_ms": 0, "error_code": 0, "producer_id": 4000,
                      "producer_epoch": 0}
    ((path, body, session),) = gateway.writes
    assert path == ROUTE and session is SESSION
    assert body == {"transactional_id": None, "transaction_timeout_ms": 30_000,
                    "producer_id": -1, "producer_epoch": -1}


def test_a_reinitializing_transactional_producer_sends_its_id_and_epoch() -> None:
    gateway = FakeGateway({"error_code": 0, "producer_id": 77, "producer_epoch": 5})
    answer = handle(gateway, 3, {"transactional_id": "tx-1", "transaction_timeout_ms": 60_000,
                                 "producer_id": 77, "producer_epoch": 4})
    assert (answer["producer_id"], answer["producer_epoch"]) == (77, 5)
    assert gateway.writes[0][1] == {"transactional_id": "tx-1",
                                    "transaction_timeout_ms": 60_000,
                                    "producer_id": 77, "producer_epoch": 4}


def test_before_v3_there_is_no_producer_id_to_send() -> None:
    gateway = FakeGateway({"error_code": 0, "producer_id": 1, "producer_epoch": 0})
    handle(gateway, 2, {"transactional_id": "tx-1", "transaction_timeout_ms": 1000})
    sent = gateway.writes[0][1]
    assert (sent["producer_id"], sent["producer_epoch"]) == (-1, -1)


def test_a_per_request_error_of_the_route_is_the_answers() -> None:
    gateway = FakeGateway({"error_code": Errors.CONCURRENT_TRANSACTIONS.code})
    answer = handle(gateway, 4, {"transactional_id": "tx-1"})
    assert answer == {"throttle_time_ms": 0, "error_code": Errors.CONCURRENT_TRANSACTIONS.code,
                      "producer_id": -1, "producer_epoch": -1}


@pytest.mark.parametrize("error", [Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                   Errors.CLUSTER_AUTHORIZATION_FAILED,
                                   Errors.NOT_COORDINATOR])
def test_a_refusal_of_the_route_is_the_answers_error_code(error: Errors) -> None:
    gateway = FakeGateway(GatewayError(403, error, "no"))
    answer = handle(gateway, 4, {"transactional_id": "tx-1"})
    assert answer == {"throttle_time_ms": 0, "error_code": error.code, "producer_id": -1,
                      "producer_epoch": -1}


@pytest.mark.parametrize("version", range(5))
def test_every_version_reads_with_a_stock_codec(version: int) -> None:
    classes = importlib.import_module("tests.support.kafka_messages").kafka_python_classes()
    request = classes["InitProducerIdRequest"](transactional_id="tx-9",
                                               transaction_timeout_ms=5000)
    wire = bytes(request.encode(version=version))
    gateway = FakeGateway({"error_code": 0, "producer_id": 123, "producer_epoch": 2})
    answer = served(gateway, KafkaRequest(
        RequestHeader(INIT_PRODUCER_ID_KEY, version, 1, None, 0),
        decode("InitProducerIdRequest", version, wire), SESSION))
    assert gateway.writes[0][1]["transactional_id"] == "tx-9"
    assert gateway.writes[0][1]["transaction_timeout_ms"] == 5000
    theirs = classes["InitProducerIdResponse"].decode(
        encode("InitProducerIdResponse", version, answer), version=version)
    assert (theirs.error_code, theirs.producer_id, theirs.producer_epoch) == (0, 123, 2)


@pytest.mark.parametrize(("version", "expected"), [(0, Errors.INVALID_PRODUCER_EPOCH),
                                                   (3, Errors.INVALID_PRODUCER_EPOCH),
                                                   (4, Errors.PRODUCER_FENCED)])
def test_producer_fenced_is_invalid_producer_epoch_before_v4(version: int,
                                                             expected: Errors) -> None:
    for answer in ({"error_code": Errors.PRODUCER_FENCED.code},
                   GatewayError(200, Errors.PRODUCER_FENCED, "fenced")):
        assert handle(FakeGateway(answer), version, {"transactional_id": "tx-1"})[
            "error_code"] == expected.code
