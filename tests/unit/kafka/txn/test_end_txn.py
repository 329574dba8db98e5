"""EndTxn 0-4 (chunkraft.kafka.txn.end_txn) over a fake gateway standing in for the broker's
end-txn route: the fields moved by name, the route's error code as the answer's (PRODUCER_FENCED
as INVALID_PRODUCER_EPOCH before v2), a refusal as the error code, every version through both
codecs."""

from __future__ import annotations

import pytest

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.codec.messages import encode
from chunkraft.kafka.txn.end_txn import ROUTE, end_txn_handler
from tests.unit.kafka.txn.support import SESSION, FakeGateway, handle, served, stock_classes

NAME = "EndTxn"
REQUEST = {"transactional_id": "tx-1", "producer_id": 4000, "producer_epoch": 3,
           "committed": True}


def test_the_handler_serves_versions_0_to_4_after_authentication() -> None:
    handler = end_txn_handler(FakeGateway({}))
    assert (handler.api_key, handler.min_version, handler.max_version) == (26, 0, 4)
    assert not handler.private and not handler.before_authentication


@pytest.mark.parametrize("committed", [True, False])
def test_a_commit_or_an_abort_goes_to_the_route(committed: bool) -> None:
    gateway = FakeGateway({"throttle_time_ms": 0, "error_code": 0, "error_message": None})
    answer = handle(end_txn_handler(gateway), NAME, 4, {**REQUEST, "committed": committed})
    ((path, body, session),) = gateway.writes
    assert path == ROUTE and session is SESSION
    assert body == {"transactional_id": "tx-1", "producer_id": 4000, "producer_epoch": 3,
                    "committed": committed}
    assert (answer["throttle_time_ms"], answer["error_code"]) == (0, 0)


@pytest.mark.parametrize(("version", "expected"), [
    (0, Errors.INVALID_PRODUCER_EPOCH), (1, Errors.INVALID_PRODUCER_EPOCH),
    (2, Errors.PRODUCER_FENCED), (4, Errors.PRODUCER_FENCED)])
def test_a_fenced_producer_is_told_in_the_words_of_its_version(
        version: int, expected: Errors) -> None:
    gateway = FakeGateway({"error_code": Errors.PRODUCER_FENCED.code})
    assert handle(end_txn_handler(gateway), NAME, version, REQUEST)["error_code"] == (
        expected.code)


@pytest.mark.parametrize("error", [Errors.CONCURRENT_TRANSACTIONS, Errors.INVALID_TXN_STATE,
                                   Errors.NOT_COORDINATOR])
def test_the_routes_error_code_is_the_answers(error: Errors) -> None:
    gateway = FakeGateway({"error_code": error.code, "error_message": "why"})
    assert handle(end_txn_handler(gateway), NAME, 3, REQUEST)["error_code"] == error.code


@pytest.mark.parametrize("error", [Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                   Errors.INVALID_REQUEST])
def test_a_refusal_of_the_route_is_the_answers_error_code(error: Errors) -> None:
    gateway = FakeGateway(GatewayError(403, error, "no"))
    answer = handle(end_txn_handler(gateway), NAME, 1, REQUEST)
    assert (answer["throttle_time_ms"], answer["error_code"]) == (0, error.code)


@pytest.mark.parametrize("version", range(5))
def test_every_version_reads_with_a_stock_codec(version: int) -> None:
    classes = stock_classes()
    request = classes[f"{NAME}Request"](transactional_id="tx-9", producer_id=77,
                                        producer_epoch=1, committed=False)
    gateway = FakeGateway({"error_code": Errors.CONCURRENT_TRANSACTIONS.code})
    answer = served(end_txn_handler(gateway), version, bytes(request.encode(version=version)),
                    NAME)
    assert gateway.sent == {"transactional_id": "tx-9", "producer_id": 77, "producer_epoch": 1,
                            "committed": False}
    theirs = classes[f"{NAME}Response"].decode(encode(f"{NAME}Response", version, answer),
                                               version=version)
    assert theirs.error_code == Errors.CONCURRENT_TRANSACTIONS.code
