"""AddOffsetsToTxn 0-3 (chunkraft.kafka.txn.add_offsets) over a fake gateway standing in for
the broker's add-offsets-to-txn route: the fields moved by name, the route's error code as the
answer's (PRODUCER_FENCED as INVALID_PRODUCER_EPOCH before v2), a refusal as the error code,
every version through both codecs."""

from __future__ import annotations

import pytest

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.codec.messages import encode
from chunkraft.kafka.txn.add_offsets import ROUTE, add_offsets_to_txn_handler
from tests.unit.kafka.txn.support import SESSION, FakeGateway, handle, served, stock_classes

NAME = "AddOffsetsToTxn"
REQUEST = {"transactional_id": "tx-1", "producer_id": 4000, "producer_epoch": 3,
           "group_id": "billing"}


def test_the_handler_serves_versions_0_to_3_after_authentication() -> None:
    handler = add_offsets_to_txn_handler(FakeGateway({}))
    assert (handler.api_key, handler.min_version, handler.max_version) == (25, 0, 3)
    assert not handler.private and not handler.before_authentication


def test_the_group_goes_to_the_route() -> None:
    gateway = FakeGateway({"throttle_time_ms": 0, "error_code": 0, "error_message": None})
    answer = handle(add_offsets_to_txn_handler(gateway), NAME, 3, REQUEST)
    ((path, body, session),) = gateway.writes
    assert path == ROUTE and session is SESSION
    assert body == REQUEST
    assert answer == {"throttle_time_ms": 0, "error_code": 0}


@pytest.mark.parametrize(("version", "expected"), [
    (0, Errors.INVALID_PRODUCER_EPOCH), (1, Errors.INVALID_PRODUCER_EPOCH),
    (2, Errors.PRODUCER_FENCED), (3, Errors.PRODUCER_FENCED)])
def test_a_fenced_producer_is_told_in_the_words_of_its_version(
        version: int, expected: Errors) -> None:
    gateway = FakeGateway({"error_code": Errors.PRODUCER_FENCED.code})
    assert handle(add_offsets_to_txn_handler(gateway), NAME, version, REQUEST)[
        "error_code"] == expected.code


@pytest.mark.parametrize("error", [Errors.GROUP_AUTHORIZATION_FAILED,
                                   Errors.COORDINATOR_NOT_AVAILABLE])
def test_the_routes_error_code_is_the_answers(error: Errors) -> None:
    gateway = FakeGateway({"error_code": error.code, "error_message": "why"})
    assert handle(add_offsets_to_txn_handler(gateway), NAME, 2, REQUEST)["error_code"] == (
        error.code)


def test_a_refusal_of_the_route_is_the_answers_error_code() -> None:
    gateway = FakeGateway(GatewayError(400, Errors.INVALID_REQUEST, "bad"))
    assert handle(add_offsets_to_txn_handler(gateway), NAME, 0, REQUEST) == {
        "throttle_time_ms": 0, "error_code": Errors.INVALID_REQUEST.code}


@pytest.mark.parametrize("version", range(4))
def test_every_version_reads_with_a_stock_codec(version: int) -> None:
    classes = stock_classes()
    request = classes[f"{NAME}Request"](transactional_id="tx-9", producer_id=77,
                                        producer_epoch=1, group_id="g")
    gateway = FakeGateway({"error_code": 0})
    answer = served(add_offsets_to_txn_handler(gateway), version,
                    bytes(request.encode(version=version)), NAME)
    assert gateway.sent == {"transactional_id": "tx-9", "producer_id": 77, "producer_epoch": 1,
                            "group_id": "g"}
    theirs = classes[f"{NAME}Response"].decode(encode(f"{NAME}Response", version, answer),
                                               version=version)
    assert theirs.error_code == 0
