"""AddPartitionsToTxn 0-3 (chunkraft.kafka.txn.add_partitions) over a fake gateway standing in
for the broker's add-partitions-to-txn route: Kafka's V3AndBelow fields moved to the route's
body, per-partition results back, a refusal on every partition, and every version through both
codecs."""

from __future__ import annotations

from typing import Any

import pytest

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.codec.messages import encode
from chunkraft.kafka.txn.add_partitions import ROUTE, add_partitions_to_txn_handler
from tests.unit.kafka.txn.support import SESSION, FakeGateway, handle, served, stock_classes

NAME = "AddPartitionsToTxn"
REQUEST = {"v3_and_below_transactional_id": "tx-1", "v3_and_below_producer_id": 4000,
           "v3_and_below_producer_epoch": 3, "v3_and_below_topics": [
               {"name": "orders", "partitions": [0, 2]}, {"name": "audit", "partitions": [1]}]}


def route_answer(codes: dict[tuple[str, int], Errors]) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (name, index), error in codes.items():
        topics.setdefault(name, []).append({"partition_index": index, "error_code": error.code,
                                            "error_message": None})
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "results": [{"name": name, "results": results} for name, results in topics.items()]}


def codes_of(answer: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {(topic["name"], p["partition_index"]): p["partition_error_code"]
            for topic in answer["results_by_topic_v3_and_below"]
            for p in topic["results_by_partition"]}


ALL = [("orders", 0), ("orders", 2), ("audit", 1)]


def test_the_handler_serves_versions_0_to_3_after_authentication() -> None:
    handler = add_partitions_to_txn_handler(FakeGateway({}))
    assert (handler.api_key, handler.min_version, handler.max_version) == (24, 0, 3)
    assert not handler.private and not handler.before_authentication


def test_the_transaction_and_its_partitions_go_to_the_route() -> None:
    gateway = FakeGateway(route_answer(dict.fromkeys(ALL, Errors.NONE)))
    answer = handle(add_partitions_to_txn_handler(gateway), NAME, 3, REQUEST)
    ((path, body, session),) = gateway.writes
    assert path == ROUTE and session is SESSION
    assert body == {"transactional_id": "tx-1", "producer_id": 4000, "producer_epoch": 3,
                    "topics": [{"name": "orders", "partitions": [0, 2]},
                               {"name": "audit", "partitions": [1]}]}
    assert answer["throttle_time_ms"] == 0
    assert codes_of(answer) == dict.fromkeys(ALL, 0)


def test_per_partition_results_are_answered_as_the_route_gives_them() -> None:
    outcome = {("orders", 0): Errors.TOPIC_AUTHORIZATION_FAILED,
               ("orders", 2): Errors.TOPIC_AUTHORIZATION_FAILED,
               ("audit", 1): Errors.OPERATION_NOT_ATTEMPTED}
    gateway = FakeGateway(route_answer(outcome))
    answer = handle(add_partitions_to_txn_handler(gateway), NAME, 1, REQUEST)
    assert codes_of(answer) == {tp: error.code for tp, error in outcome.items()}


@pytest.mark.parametrize(("version", "expected"), [
    (0, Errors.INVALID_PRODUCER_EPOCH), (1, Errors.INVALID_PRODUCER_EPOCH),
    (2, Errors.PRODUCER_FENCED), (3, Errors.PRODUCER_FENCED)])
def test_a_fenced_producer_is_told_in_the_words_of_its_version(
        version: int, expected: Errors) -> None:
    gateway = FakeGateway(route_answer(dict.fromkeys(ALL, Errors.PRODUCER_FENCED)))
    answer = handle(add_partitions_to_txn_handler(gateway), NAME, version, REQUEST)
    assert codes_of(answer) == dict.fromkeys(ALL, expected.code)


@pytest.mark.parametrize("error", [Errors.COORDINATOR_NOT_AVAILABLE, Errors.INVALID_REQUEST,
                                   Errors.CLUSTER_AUTHORIZATION_FAILED])
def test_a_refusal_of_the_whole_request_answers_every_partition(error: Errors) -> None:
    gateway = FakeGateway(GatewayError(400, error, "no"))
    answer = handle(add_partitions_to_txn_handler(gateway), NAME, 2, REQUEST)
    assert codes_of(answer) == dict.fromkeys(ALL, error.code)


@pytest.mark.parametrize("version", range(4))
def test_every_version_reads_with_a_stock_codec(version: int) -> None:
    classes = stock_classes()
    request_class = classes[f"{NAME}Request"]
    topic = request_class.AddPartitionsToTxnTopic
    request = request_class(v3_and_below_transactional_id="tx-9",
                            v3_and_below_producer_id=77, v3_and_below_producer_epoch=1,
                            v3_and_below_topics=[topic(name="t", partitions=[0, 1])])
    gateway = FakeGateway(route_answer({("t", 0): Errors.NONE,
                                        ("t", 1): Errors.CONCURRENT_TRANSACTIONS}))
    answer = served(add_partitions_to_txn_handler(gateway), version,
                    bytes(request.encode(version=version)), NAME)
    assert gateway.sent == {"transactional_id": "tx-9", "producer_id": 77, "producer_epoch": 1,
                            "topics": [{"name": "t", "partitions": [0, 1]}]}
    theirs = classes[f"{NAME}Response"].decode(encode(f"{NAME}Response", version, answer),
                                               version=version)
    ((name, partitions),) = [(t.name, t.results_by_partition)
                             for t in theirs.results_by_topic_v3_and_below]
    assert name == "t"
    assert [(p.partition_index, p.partition_error_code) for p in partitions] == [
        (0, 0), (1, Errors.CONCURRENT_TRANSACTIONS.code)]
