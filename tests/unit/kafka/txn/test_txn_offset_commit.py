"""TxnOffsetCommit 0-3 (chunkraft.kafka.txn.txn_offset_commit) over a fake gateway standing in
for the group coordinator's txn-offset-commit route: offsets, leader epochs, metadata and (v3)
the consumer's generation moved to the route's body, per-partition results back in the words
of the request's version, a refusal on every partition, every version through both codecs."""

from __future__ import annotations

from typing import Any

import pytest

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import GatewayError
from chunkraft.kafka.codec.messages import encode
from chunkraft.kafka.txn.txn_offset_commit import ROUTE, txn_offset_commit_handler
from tests.unit.kafka.txn.support import SESSION, FakeGateway, handle, served, stock_classes

NAME = "TxnOffsetCommit"


def request(version: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "transactional_id": "tx-1", "group_id": "billing", "producer_id": 4000,
        "producer_epoch": 3, "topics": [
            {"name": "orders", "partitions": [
                {"partition_index": 0, "committed_offset": 120, "committed_leader_epoch": 4,
                 "committed_metadata": "m"},
                {"partition_index": 1, "committed_offset": 7, "committed_leader_epoch": 4,
                 "committed_metadata": None}]}]}
    if version >= 3:
        body.update(generation_id=5, member_id="consumer-1", group_instance_id="host-a")
    return body


def route_answer(codes: dict[tuple[str, int], Errors]) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (name, index), error in codes.items():
        topics.setdefault(name, []).append({"partition_index": index, "error_code": error.code,
                                            "error_message": None})
    return {"throttle_time_ms": 0, "topics": [{"name": name, "partitions": partitions}
                                              for name, partitions in topics.items()]}


def codes_of(answer: dict[str, Any]) -> dict[tuple[str, int], int]:
    return {(topic["name"], p["partition_index"]): p["error_code"]
            for topic in answer["topics"] for p in topic["partitions"]}


BOTH = [("orders", 0), ("orders", 1)]


def test_the_handler_serves_versions_0_to_3_after_authentication() -> None:
    handler = txn_offset_commit_handler(FakeGateway({}))
    assert (handler.api_key, handler.min_version, handler.max_version) == (28, 0, 3)
    assert not handler.private and not handler.before_authentication


def test_v3_sends_the_consumers_generation_and_member_id() -> None:
    gateway = FakeGateway(route_answer(dict.fromkeys(BOTH, Errors.NONE)))
    answer = handle(txn_offset_commit_handler(gateway), NAME, 3, request(3))
    ((path, body, session),) = gateway.writes
    assert path == ROUTE and session is SESSION
    assert body == {
        "transactional_id": "tx-1", "group_id": "billing", "producer_id": 4000,
        "producer_epoch": 3, "generation_id": 5, "member_id": "consumer-1", "topics": [
            {"name": "orders", "partitions": [
                {"partition_index": 0, "committed_offset": 120, "committed_leader_epoch": 4,
                 "committed_metadata": "m"},
                {"partition_index": 1, "committed_offset": 7, "committed_leader_epoch": 4,
                 "committed_metadata": None}]}]}
    assert answer["throttle_time_ms"] == 0 and codes_of(answer) == dict.fromkeys(BOTH, 0)


def test_before_v3_there_is_no_generation_and_before_v2_no_leader_epoch() -> None:
    gateway = FakeGateway(route_answer(dict.fromkeys(BOTH, Errors.NONE)))
    handle(txn_offset_commit_handler(gateway), NAME, 1, request(1))
    sent = gateway.sent
    assert (sent["generation_id"], sent["member_id"]) == (-1, "")
    assert [p["committed_leader_epoch"] for p in sent["topics"][0]["partitions"]] == [-1, -1]


def test_per_partition_results_are_answered_as_the_route_gives_them() -> None:
    outcome = {("orders", 0): Errors.NONE, ("orders", 1): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    gateway = FakeGateway(route_answer(outcome))
    answer = handle(txn_offset_commit_handler(gateway), NAME, 2, request(2))
    assert codes_of(answer) == {tp: error.code for tp, error in outcome.items()}


@pytest.mark.parametrize("version", range(4))
def test_a_fenced_producer_gets_invalid_producer_epoch_at_every_version(version: int) -> None:
    gateway = FakeGateway(route_answer(dict.fromkeys(BOTH, Errors.PRODUCER_FENCED)))
    answer = handle(txn_offset_commit_handler(gateway), NAME, version, request(version))
    assert codes_of(answer) == dict.fromkeys(BOTH, Errors.INVALID_PRODUCER_EPOCH.code)


@pytest.mark.parametrize(("version", "expected"), [
    (0, Errors.COORDINATOR_NOT_AVAILABLE), (1, Errors.COORDINATOR_NOT_AVAILABLE),
    (2, Errors.COORDINATOR_LOAD_IN_PROGRESS), (3, Errors.COORDINATOR_LOAD_IN_PROGRESS)])
def test_a_loading_coordinator_is_not_available_before_v2(version: int,
                                                          expected: Errors) -> None:
    gateway = FakeGateway(route_answer(dict.fromkeys(BOTH, Errors.COORDINATOR_LOAD_IN_PROGRESS)))
    answer = handle(txn_offset_commit_handler(gateway), NAME, version, request(version))
    assert codes_of(answer) == dict.fromkeys(BOTH, expected.code)


@pytest.mark.parametrize("error", [Errors.INVALID_REQUEST, Errors.NOT_COORDINATOR])
def test_a_refusal_of_the_whole_request_answers_every_partition(error: Errors) -> None:
    gateway = FakeGateway(GatewayError(400, error, "no"))
    answer = handle(txn_offset_commit_handler(gateway), NAME, 3, request(3))
    assert codes_of(answer) == dict.fromkeys(BOTH, error.code)


@pytest.mark.parametrize("version", range(4))
def test_every_version_reads_with_a_stock_codec(version: int) -> None:
    classes = stock_classes()
    request_class = classes[f"{NAME}Request"]
    topic = request_class.TxnOffsetCommitRequestTopic
    partition = topic.TxnOffsetCommitRequestPartition
    stock = request_class(
        transactional_id="tx-9", group_id="g", producer_id=77, producer_epoch=1,
        generation_id=-1, member_id="", group_instance_id=None,
        topics=[topic(name="t", partitions=[partition(
            partition_index=2, committed_offset=99, committed_leader_epoch=-1,
            committed_metadata="")])])
    gateway = FakeGateway(route_answer({("t", 2): Errors.NONE}))
    answer = served(txn_offset_commit_handler(gateway), version,
                    bytes(stock.encode(version=version)), NAME)
    assert gateway.sent["topics"] == [{"name": "t", "partitions": [
        {"partition_index": 2, "committed_offset": 99, "committed_leader_epoch": -1,
         "committed_metadata": ""}]}]
    assert (gateway.sent["generation_id"], gateway.sent["member_id"]) == (-1, "")
    theirs = classes[f"{NAME}Response"].decode(encode(f"{NAME}Response", version, answer),
                                               version=version)
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in theirs.topics] == [("t", [(2, 0)])]
