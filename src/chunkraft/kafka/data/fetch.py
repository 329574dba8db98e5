"""Fetch 4-12 on a broker: Kafka's request to the ReplicaManager's fetch and back.

Sessions (KIP-227): this broker never creates one. Every answer carries session id 0, which
tells a client its full fetch was served without a session, so its next fetch is full again
(kcat, confluent-kafka, kafka-python and aiokafka are tested doing so); a request naming a
session id answers FETCH_SESSION_ID_NOT_FOUND, and an incremental epoch without one
INVALID_FETCH_SESSION_EPOCH, after which a client starts over with a full fetch.

Bounds the HTTP surface enforces are clamped, not refused (a Kafka client picks its own
``fetch.max.wait.ms``): waits at most 30 s, at least one byte per partition and per answer.
A consumer (``replica_id`` -1) needs READ on each topic; a replica id names a broker the
principal must be allowed to act as (replication itself runs over HTTP).

Inactive chunks (KIP-1114) a broker does not hold: a consumer of Fetch v11+ is sent to the
broker that serves its offset with ``preferred_read_replica`` (KIP-392), once per offset on a
connection (``fetch_redirects``: a client that comes back for the same offset ignores the
field); one of an older version, or one that came back, is answered by the leader with the
records it reads from a holder (``broker_agent/read_replica.py``, ``fetch_path``).

As Kafka's brokers do, a fetch below version 10 of a topic whose ``compression.type`` is zstd
answers UNSUPPORTED_COMPRESSION_TYPE for its partitions: a client that old cannot read zstd
(KIP-110). Batches are otherwise returned as stored, in whatever codec they are.
"""

from __future__ import annotations

from typing import Any

from chunkraft.broker_agent.read_replica import ConsumerReads
from chunkraft.broker_agent.server.access import allowed_topics
from chunkraft.error_codes import Errors
from chunkraft.kafka.data.fetch_redirects import redirects_of
from chunkraft.kafka.server.requests import KafkaRequest
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.data_plane import (
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchTopic,
)

__all__ = ["FETCH_KEY", "MAX_WAIT_MS", "PREFERRED_READ_REPLICA_VERSION", "fetch_answer"]

FETCH_KEY = 1
PREFERRED_READ_REPLICA_VERSION = 11
"""The first Fetch version whose answer has ``preferred_read_replica`` (KIP-392)."""
MAX_WAIT_MS = 30_000
ZSTD_MIN_VERSION = 10
"""The first Fetch version whose client reads zstd batches (KIP-110)."""
_INT32_MAX = 2**31 - 1


def _partition_answer(result: FetchPartitionResponse) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "partition_index": result.partition, "error_code": result.error_code,
        "high_watermark": result.high_watermark,
        "last_stable_offset": result.last_stable_offset,
        "log_start_offset": result.log_start_offset,
        "aborted_transactions": None if result.aborted_transactions is None else [
            {"producer_id": a.producer_id, "first_offset": a.first_offset}
            for a in result.aborted_transactions],
        "preferred_read_replica": result.preferred_read_replica, "records": result.records}
    if result.diverging_epoch is not None:
        answer["diverging_epoch"] = {"epoch": result.diverging_epoch.epoch,
                                     "end_offset": result.diverging_epoch.end_offset}
    return answer


def _refused_topic(topic: dict[str, Any], error: Errors) -> dict[str, Any]:
    return {"topic": topic["topic"], "partitions": [
        {"partition_index": p["partition"], "error_code": error.code, "high_watermark": -1,
         "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": None,
         "preferred_read_replica": -1, "records": None} for p in topic["partitions"]]}


def _whole(error: Errors) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error.code, "session_id": 0, "responses": []}


def _wanted(topic: dict[str, Any]) -> FetchTopic:
    return FetchTopic.model_construct(topic=topic["topic"], partitions=tuple(
        FetchPartition.model_construct(
            partition=p["partition"], fetch_offset=p["fetch_offset"],
            partition_max_bytes=min(max(p["partition_max_bytes"], 1), _INT32_MAX),
            current_leader_epoch=p.get("current_leader_epoch", -1),
            last_fetched_epoch=p.get("last_fetched_epoch", -1),
            log_start_offset=p.get("log_start_offset", -1), key_range=None,
            chunk_start_offset=-1)
        for p in topic["partitions"]))


async def fetch_answer(runtime: Any, request: KafkaRequest) -> dict[str, Any]:
    """The Fetch response body for ``request`` (see the module docstring)."""
    body = request.body
    if request.version >= 7:
        if body.get("session_id", 0) != 0:
            return _whole(Errors.FETCH_SESSION_ID_NOT_FOUND)
        if body.get("session_epoch", -1) > 0:
            return _whole(Errors.INVALID_FETCH_SESSION_EPOCH)
    image = runtime.follower.image
    authorizer = runtime.authorizer
    principal = request.principal
    replica_id = body.get("replica_id", -1)
    topics = body["topics"]
    answers: dict[int, dict[str, Any]] = {}
    if replica_id >= 0:
        if authorizer is not None and not authorizer.may_act_as_broker(
                image, principal, replica_id):
            return _whole(Errors.CLUSTER_AUTHORIZATION_FAILED)
        allowed = {topic["topic"] for topic in topics}
    else:
        allowed = allowed_topics(authorizer, image, principal, AclOperation.READ,
                                 (topic["topic"] for topic in topics))
    kept: list[tuple[int, FetchTopic]] = []
    configs = runtime.replica_manager.configs
    for position, topic in enumerate(topics):
        if topic["topic"] not in allowed:
            answers[position] = _refused_topic(topic, Errors.TOPIC_AUTHORIZATION_FAILED)
        elif (request.version < ZSTD_MIN_VERSION
                and configs.topic(topic["topic"]).compression_type == "zstd"):
            answers[position] = _refused_topic(topic, Errors.UNSUPPORTED_COMPRESSION_TYPE)
        else:
            kept.append((position, _wanted(topic)))
    if kept:
        wanted = tuple(topic for _, topic in kept)
        redirects = redirects_of(request.session.extras)
        reads = None
        if replica_id < 0:
            reads = ConsumerReads(
                preferred_replica=request.version >= PREFERRED_READ_REPLICA_VERSION,
                listener=request.session.listener,
                not_redirected=redirects.not_to_redirect(
                    (t.topic, p.partition, p.fetch_offset) for t in wanted for p in t.partitions))
        response = await runtime.replica_manager.fetch(FetchRequest.model_construct(
            replica_id=replica_id, replica_epoch=-1,
            max_wait_ms=min(max(body["max_wait_ms"], 0), MAX_WAIT_MS),
            min_bytes=min(max(body["min_bytes"], 0), _INT32_MAX),
            max_bytes=min(max(body.get("max_bytes", _INT32_MAX), 1), _INT32_MAX),
            isolation_level=1 if body.get("isolation_level", 0) == 1 else 0,
            topics=wanted), reads)
        for (position, topic), answered in zip(kept, response.responses, strict=True):
            if reads is not None:
                for want, result in zip(topic.partitions, answered.partitions, strict=True):
                    redirects.answered(topic.topic, want.partition, want.fetch_offset,
                                       result.preferred_read_replica)
            answers[position] = {"topic": answered.topic, "partitions": [
                _partition_answer(result) for result in answered.partitions]}
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0,
            "responses": [answers[position] for position in range(len(topics))]}
