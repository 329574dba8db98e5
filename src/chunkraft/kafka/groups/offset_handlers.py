"""OffsetCommit 2-9 and OffsetFetch 1-9 on a broker: the broker's own offset-commit and
offset-fetch routes, called in-process.

The routes hold Kafka's semantics and authorization already (READ on the group and on each
topic to commit, DESCRIBE to fetch; NOT_COORDINATOR when this broker is not the group's
coordinator; a commit of a member outside the current generation refused), so these
handlers move fields. Versions differ only in form: OffsetCommit's retention time (2-4) is
ignored as Kafka ignores it since 2.1; OffsetFetch 8+ asks for several groups at once
(answered one by one), and a partition without a commit answers offset -1. A whole-request
refusal of a route becomes every partition's error (OffsetCommit) or the group's error
(OffsetFetch).
"""

from __future__ import annotations

from typing import Any

from chunkraft.error_codes import Errors
from chunkraft.kafka.admin.gateway import AdminGateway, GatewayError
from chunkraft.kafka.server.requests import ApiHandler, KafkaRequest, KafkaSession

__all__ = ["OFFSET_COMMIT_KEY", "OFFSET_FETCH_KEY", "commit_topics", "offset_handlers"]

OFFSET_COMMIT_KEY, OFFSET_FETCH_KEY = 8, 9
COMMIT_ROUTE = "/broker/v1/offset-commit"
FETCH_ROUTE = "/broker/v1/offset-fetch"


def commit_topics(topics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The offset-commit routes' ``topics`` for the topics of a Kafka (Txn)OffsetCommit."""
    return [{"name": t["name"], "partitions": [
        {"partition_index": p["partition_index"], "committed_offset": p["committed_offset"],
         "committed_leader_epoch": p.get("committed_leader_epoch", -1),
         "committed_metadata": p.get("committed_metadata")}
        for p in t["partitions"]]} for t in topics]


def _commit_errors(topics: list[dict[str, Any]], error: Errors) -> list[dict[str, Any]]:
    return [{"name": t["name"], "partitions": [
        {"partition_index": p["partition_index"], "error_code": error.code}
        for p in t["partitions"]]} for t in topics]


async def _offset_commit(gateway: AdminGateway, request: KafkaRequest) -> dict[str, Any]:
    body = request.body
    topics = body["topics"]
    sent = {"group_id": body["group_id"],
            "generation_id": body.get("generation_id_or_member_epoch", -1),
            "member_id": body.get("member_id", ""),
            "topics": commit_topics(topics)}
    try:
        answer = await gateway.write(COMMIT_ROUTE, sent, request.session)
    except GatewayError as error:
        return {"throttle_time_ms": 0, "topics": _commit_errors(topics, error.error)}
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": p.get("error_code", 0)}
            for p in t["partitions"]]} for t in answer.get("topics", [])]}


def _fetched_topics(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": t["name"], "partitions": [
        {"partition_index": p["partition_index"],
         "committed_offset": p.get("committed_offset", -1),
         "committed_leader_epoch": p.get("committed_leader_epoch", -1),
         "metadata": p.get("metadata") or "", "error_code": p.get("error_code", 0)}
        for p in t["partitions"]]} for t in answer.get("topics", [])]


async def _fetch_group(gateway: AdminGateway, session: KafkaSession, group_id: str,
                       topics: list[dict[str, Any]] | None, require_stable: bool
                       ) -> tuple[Errors, list[dict[str, Any]]]:
    """One group's (error, topics) from the offset-fetch route."""
    sent = {"group_id": group_id, "require_stable": require_stable,
            "topics": None if topics is None else [
                {"name": t["name"], "partition_indexes": t["partition_indexes"]}
                for t in topics]}
    try:
        answer = await gateway.write(FETCH_ROUTE, sent, session)  # a POST route, no read wait
    except GatewayError as error:
        return error.error, []
    return Errors.for_code(answer.get("error_code", 0)), _fetched_topics(answer)


async def _offset_fetch(gateway: AdminGateway, request: KafkaRequest) -> dict[str, Any]:
    body, version = request.body, request.version
    stable = bool(body.get("require_stable", False))
    if version >= 8:
        groups = []
        for group in body["groups"]:
            error, topics = await _fetch_group(gateway, request.session, group["group_id"],
                                               group.get("topics"), stable)
            groups.append({"group_id": group["group_id"], "topics": topics,
                           "error_code": error.code})
        return {"throttle_time_ms": 0, "groups": groups}
    asked = body.get("topics")
    error, topics = await _fetch_group(gateway, request.session, body["group_id"], asked,
                                       stable)
    if version < 2 and error is not Errors.NONE:
        # Version 1 has no top-level error: each asked partition carries it.
        topics = [{"name": t["name"], "partitions": [
            {"partition_index": p, "committed_offset": -1, "metadata": "",
             "error_code": error.code} for p in t["partition_indexes"]]}
            for t in asked or []]
    return {"throttle_time_ms": 0, "topics": topics, "error_code": error.code}


def offset_handlers(gateway: AdminGateway) -> list[ApiHandler]:
    """OffsetCommit 2-9 and OffsetFetch 1-9 over ``gateway`` (the broker app's routes)."""

    async def commit(request: KafkaRequest) -> dict[str, Any]:
        return await _offset_commit(gateway, request)

    async def fetch(request: KafkaRequest) -> dict[str, Any]:
        return await _offset_fetch(gateway, request)

    return [ApiHandler(OFFSET_COMMIT_KEY, 2, 9, commit), ApiHandler(OFFSET_FETCH_KEY, 1, 9, fetch)]
