"""AddPartitionsToTxn 0-3 on a broker: the transaction coordinator's add-partitions-to-txn
route, called in-process.

Versions 0-3 carry one transaction (Kafka names its fields ``V3AndBelow...``); v4+ is the
batched broker-to-broker form of KIP-890 and is not served. The route checks WRITE on the
transactional id and each topic and answers every partition with its outcome (a refused or
unknown partition fails the request: the others are OPERATION_NOT_ATTEMPTED, as Kafka answers);
this module only moves fields. A whole-request refusal of the route answers every partition
with its error.
"""

from __future__ import annotations

from typing import Any

from chunkraft.kafka.admin.gateway import AdminGateway
from chunkraft.kafka.server.requests import ApiHandler
from chunkraft.kafka.translated_route import translated_route_handler
from chunkraft.kafka.txn.compat import fenced_for_version

__all__ = ["ADD_PARTITIONS_TO_TXN_KEY", "ROUTE", "add_partitions_to_txn_handler"]

ADD_PARTITIONS_TO_TXN_KEY = 24
ROUTE = "/broker/v1/add-partitions-to-txn"
FENCED_FROM = 2
"""The first version that may answer PRODUCER_FENCED."""


def route_body(body: dict[str, Any]) -> dict[str, Any]:
    """The route's JSON body for a v0-3 request body."""
    return {"transactional_id": body["v3_and_below_transactional_id"],
            "producer_id": body["v3_and_below_producer_id"],
            "producer_epoch": body["v3_and_below_producer_epoch"],
            "topics": [{"name": topic["name"], "partitions": list(topic["partitions"])}
                       for topic in body["v3_and_below_topics"]]}


def _topic(name: str, codes: list[tuple[int, int]]) -> dict[str, Any]:
    return {"name": name, "results_by_partition": [
        {"partition_index": index, "partition_error_code": code} for index, code in codes]}


def kafka_answer(answer: dict[str, Any], version: int) -> dict[str, Any]:
    """The v0-3 response body for the route's answer."""
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        _topic(topic["name"], [(p["partition_index"],
                                fenced_for_version(p.get("error_code", 0), version,
                                                   FENCED_FROM))
                               for p in topic["results"]])
        for topic in answer.get("results", [])]}


def refused_answer(body: dict[str, Any], code: int, version: int) -> dict[str, Any]:
    """Every partition of the request answered with ``code``."""
    code = fenced_for_version(code, version, FENCED_FROM)
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        _topic(topic["name"], [(index, code) for index in topic["partitions"]])
        for topic in body["v3_and_below_topics"]]}


def add_partitions_to_txn_handler(gateway: AdminGateway) -> ApiHandler:
    """AddPartitionsToTxn 0-3 over ``gateway`` (the broker app's routes)."""

    return translated_route_handler(ADD_PARTITIONS_TO_TXN_KEY, (0, 3), gateway, ROUTE, route_body,
                                    kafka_answer, refused_answer)
