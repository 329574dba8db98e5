"""ListOffsets 1-7 and OffsetForLeaderEpoch 2-4 on a broker, over the ReplicaManager.

ListOffsets: earliest (-2) is the first chunk's start (every chunk a stock consumer may read
is served, see ``fetch``), latest (-1) the high watermark or, read_committed, the last stable
offset; max timestamp (-3, version 7) the record with the largest timestamp in what this
broker can read; a timestamp finds the first offset at or after it, across chunks. DESCRIBE on each
topic, as over HTTP. OffsetForLeaderEpoch: the end offset of a leader epoch, which the Java
client and librdkafka ask after a leader change (KIP-320) before they fetch again; DESCRIBE on
each topic for a consumer, acting as the named broker for a replica.
"""

from __future__ import annotations

from typing import Any

from chunkraft.broker_agent.server.access import allowed_topics
from chunkraft.error_codes import Errors
from chunkraft.kafka.server.requests import KafkaRequest
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.data_plane import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)

__all__ = ["LIST_OFFSETS_KEY", "OFFSET_FOR_LEADER_EPOCH_KEY", "list_offsets_answer",
           "offset_for_leader_epoch_answer"]

LIST_OFFSETS_KEY = 2
OFFSET_FOR_LEADER_EPOCH_KEY = 23


def _denied(principal: Any, topic: str) -> str:
    return f"Principal {principal.name} is not authorized to DESCRIBE topic {topic!r}."


async def list_offsets_answer(runtime: Any, request: KafkaRequest) -> dict[str, Any]:
    """The ListOffsets response body for ``request``."""
    body = request.body
    topics = body["topics"]
    allowed = allowed_topics(runtime.authorizer, runtime.follower.image, request.principal,
                             AclOperation.DESCRIBE, (t["name"] for t in topics))
    answers: dict[int, dict[str, Any]] = {}
    kept: list[tuple[int, ListOffsetsTopic]] = []
    for position, topic in enumerate(topics):
        if topic["name"] not in allowed:
            answers[position] = {"name": topic["name"], "partitions": [
                {"partition_index": p["partition_index"],
                 "error_code": Errors.TOPIC_AUTHORIZATION_FAILED.code, "timestamp": -1,
                 "offset": -1, "leader_epoch": -1} for p in topic["partitions"]]}
            continue
        kept.append((position, ListOffsetsTopic.model_construct(
            name=topic["name"], partitions=tuple(ListOffsetsPartition.model_construct(
                partition_index=p["partition_index"], timestamp=p["timestamp"],
                current_leader_epoch=p.get("current_leader_epoch", -1))
                for p in topic["partitions"]))))
    if kept:
        response = runtime.replica_manager.list_offsets(ListOffsetsRequest.model_construct(
            replica_id=body.get("replica_id", -1),
            isolation_level=1 if body.get("isolation_level", 0) == 1 else 0,
            topics=tuple(topic for _, topic in kept)))
        for (position, _), answered in zip(kept, response.topics, strict=True):
            answers[position] = {"name": answered.name, "partitions": [
                {"partition_index": p.partition_index, "error_code": p.error_code,
                 "timestamp": p.timestamp, "offset": p.offset, "leader_epoch": p.leader_epoch}
                for p in answered.partitions]}
    return {"throttle_time_ms": 0,
            "topics": [answers[position] for position in range(len(topics))]}


async def offset_for_leader_epoch_answer(runtime: Any, request: KafkaRequest
                                         ) -> dict[str, Any]:
    """The OffsetForLeaderEpoch response body for ``request``."""
    body = request.body
    topics = body["topics"]
    image = runtime.follower.image
    authorizer = runtime.authorizer
    replica_id = body.get("replica_id", -2)
    if replica_id >= 0:
        may = authorizer is None or authorizer.may_act_as_broker(image, request.principal,
                                                                replica_id)
        allowed = {t["topic"] for t in topics} if may else set()
        refusal = Errors.CLUSTER_AUTHORIZATION_FAILED
    else:
        allowed = allowed_topics(authorizer, image, request.principal, AclOperation.DESCRIBE,
                                 (t["topic"] for t in topics))
        refusal = Errors.TOPIC_AUTHORIZATION_FAILED
    answers: dict[int, dict[str, Any]] = {}
    kept: list[tuple[int, OffsetForLeaderTopic]] = []
    for position, topic in enumerate(topics):
        if topic["topic"] not in allowed:
            answers[position] = {"topic": topic["topic"], "partitions": [
                {"error_code": refusal.code, "partition": p["partition"], "leader_epoch": -1,
                 "end_offset": -1} for p in topic["partitions"]]}
            continue
        kept.append((position, OffsetForLeaderTopic.model_construct(
            topic=topic["topic"], partitions=tuple(OffsetForLeaderPartition.model_construct(
                partition=p["partition"], current_leader_epoch=p.get("current_leader_epoch", -1),
                leader_epoch=p["leader_epoch"]) for p in topic["partitions"]))))
    if kept:
        response = runtime.replica_manager.offsets_for_leader_epoch(
            OffsetForLeaderEpochRequest.model_construct(
                replica_id=max(replica_id, -1), topics=tuple(topic for _, topic in kept)))
        for (position, _), answered in zip(kept, response.topics, strict=True):
            answers[position] = {"topic": answered.topic, "partitions": [
                {"error_code": p.error_code, "partition": p.partition,
                 "leader_epoch": p.leader_epoch, "end_offset": p.end_offset}
                for p in answered.partitions]}
    return {"throttle_time_ms": 0,
            "topics": [answers[position] for position in range(len(topics))]}
