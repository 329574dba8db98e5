"""TxnOffsetCommit 0-3 on a broker: the group coordinator's txn-offset-commit route, called
in-process.

A client sends it to the group's coordinator (FindCoordinator key type 0), after
AddOffsetsToTxn. The route checks WRITE on the transactional id, READ on the group and on each
topic, and appends the offsets to the group's ``__consumer_offsets`` partition as part of the
transaction (visible once it commits); every partition is answered with its outcome. Version 3
(KIP-447) carries the consumer's generation and member id, which the group checks as an
OffsetCommit's; generation -1 with no member id is a producer committing for a group it is not
a member of, fenced by its epoch alone. ``group_instance_id`` is not passed: the group
coordinator has no static members. Versions 4-5 are KIP-890's and not served. A whole-request
refusal of the route answers every partition with its error.
"""

from __future__ import annotations

from typing import Any

from chunkraft.kafka.admin.gateway import AdminGateway
from chunkraft.kafka.groups.offset_handlers import commit_topics
from chunkraft.kafka.server.requests import ApiHandler
from chunkraft.kafka.translated_route import translated_route_handler
from chunkraft.kafka.txn.compat import txn_offset_commit_code

__all__ = ["ROUTE", "TXN_OFFSET_COMMIT_KEY", "txn_offset_commit_handler"]

TXN_OFFSET_COMMIT_KEY = 28
ROUTE = "/broker/v1/txn-offset-commit"


def route_body(body: dict[str, Any]) -> dict[str, Any]:
    """The route's JSON body for a v0-3 request body (generation -1, no member before v3)."""
    return {"transactional_id": body["transactional_id"], "group_id": body["group_id"],
            "producer_id": body["producer_id"], "producer_epoch": body["producer_epoch"],
            "generation_id": body.get("generation_id", -1),
            "member_id": body.get("member_id", ""),
            "topics": commit_topics(body["topics"])}


def _topic(name: str, codes: list[tuple[int, int]], version: int) -> dict[str, Any]:
    return {"name": name, "partitions": [
        {"partition_index": index, "error_code": txn_offset_commit_code(code, version)}
        for index, code in codes]}


def kafka_answer(answer: dict[str, Any], version: int) -> dict[str, Any]:
    """The v0-3 response body for the route's answer."""
    return {"throttle_time_ms": 0, "topics": [
        _topic(topic["name"], [(p["partition_index"], p.get("error_code", 0))
                               for p in topic["partitions"]], version)
        for topic in answer.get("topics", [])]}


def refused_answer(body: dict[str, Any], code: int, version: int) -> dict[str, Any]:
    """Every partition of the request answered with ``code``."""
    return {"throttle_time_ms": 0, "topics": [
        _topic(topic["name"], [(p["partition_index"], code) for p in topic["partitions"]],
               version) for topic in body["topics"]]}


def txn_offset_commit_handler(gateway: AdminGateway) -> ApiHandler:
    """TxnOffsetCommit 0-3 over ``gateway`` (the broker app's routes)."""

    return translated_route_handler(TXN_OFFSET_COMMIT_KEY, (0, 3), gateway, ROUTE, route_body,
                                    kafka_answer, refused_answer)
