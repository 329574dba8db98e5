"""Produce 3-11 on a broker: Kafka's request to the ReplicaManager's produce and back.

What differs from the HTTP route is only what a stock producer sends: no partition count (a
Kafka producer does not know KIP-253's in-order rule, so the broker checks the count it
knows, which is always equal), acks 0 (no answer at all, as Kafka brokers do) and timeouts
beyond what the HTTP surface accepts (clamped to its 5 minutes). Records stay the bytes the
client sent; the log validates each v2 batch (CRC, sequence, size, compression) exactly as over
HTTP. As Kafka's ProduceRequest, a version below 7 may not carry zstd batches (KIP-110): such a
partition answers UNSUPPORTED_COMPRESSION_TYPE and is not appended.
Authorization: WRITE on each topic, WRITE on the transactional id when one is sent.
"""

from __future__ import annotations

from typing import Any

from chunkraft.broker_agent.server.access import allowed_topics, transactional_id_allowed
from chunkraft.dataplane.record_batch import Codec, CorruptBatchError, iter_batches
from chunkraft.error_codes import Errors
from chunkraft.kafka.server.requests import KafkaRequest
from chunkraft.protocol.acls import AclOperation
from chunkraft.protocol.data_plane import (
    ProducePartitionData,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceTopicData,
)

__all__ = ["MAX_TIMEOUT_MS", "PRODUCE_KEY", "produce_answer"]

PRODUCE_KEY = 0
MAX_TIMEOUT_MS = 300_000
"""The longest acks=all wait the ReplicaManager takes (the HTTP surface's bound)."""
ZSTD_MIN_VERSION = 7
"""The first Produce version that may carry zstd batches (KIP-110)."""


def _has_zstd(records: bytes | None) -> bool:
    """Whether any whole batch of ``records`` is zstd-compressed (headers only are read; a
    malformed tail is the log's to refuse)."""
    try:
        return any(header.compression == Codec.ZSTD for header, _ in iter_batches(records or b""))
    except CorruptBatchError:
        return False


def _partition_answer(result: ProducePartitionResponse) -> dict[str, Any]:
    return {"index": result.index, "error_code": result.error_code,
            "base_offset": result.base_offset, "log_append_time_ms": result.log_append_time_ms,
            "log_start_offset": result.log_start_offset, "record_errors": [],
            "error_message": result.error_message}


def _refused(topic: dict[str, Any], error: Errors, message: str) -> dict[str, Any]:
    return {"name": topic["name"], "partition_responses": [
        {"index": p["index"], "error_code": error.code, "base_offset": -1,
         "log_append_time_ms": -1, "log_start_offset": -1, "record_errors": [],
         "error_message": message} for p in topic["partition_data"]]}


async def produce_answer(runtime: Any, request: KafkaRequest) -> dict[str, Any] | None:
    """The Produce response body for ``request`` (None for acks=0: Kafka sends no answer)."""
    body = request.body
    acks = body["acks"]
    image = runtime.follower.image
    authorizer = runtime.authorizer
    principal = request.principal
    topics = body["topic_data"]
    answers: dict[int, dict[str, Any]] = {}
    transactional_id = body.get("transactional_id")
    if acks not in (-1, 0, 1):
        for position, topic in enumerate(topics):
            answers[position] = _refused(topic, Errors.INVALID_REQUIRED_ACKS,
                                         f"acks must be -1, 0 or 1, not {acks}")
        return _response(topics, answers)  # never acks 0 here: that one is valid
    if transactional_id is not None and not transactional_id_allowed(
            authorizer, image, principal, transactional_id):
        message = (f"Principal {principal.name} is not authorized to WRITE transactional id "
                   f"{transactional_id!r}.")
        for position, topic in enumerate(topics):
            answers[position] = _refused(topic, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                         message)
        return None if acks == 0 else _response(topics, answers)
    allowed = allowed_topics(authorizer, image, principal, AclOperation.WRITE,
                             (topic["name"] for topic in topics))
    kept: list[tuple[int, ProduceTopicData]] = []
    # Partitions answered without an append, by (topic position, partition position).
    early: dict[tuple[int, int], dict[str, Any]] = {}
    for position, topic in enumerate(topics):
        name = topic["name"]
        if name not in allowed:
            answers[position] = _refused(
                topic, Errors.TOPIC_AUTHORIZATION_FAILED,
                f"Principal {principal.name} is not authorized to WRITE topic {name!r}.")
            continue
        partitions = topic["partition_data"]
        if request.version < ZSTD_MIN_VERSION:
            message = (f"Produce requests with version {request.version} are not allowed to "
                       f"use ZStandard compression")
            for index, p in enumerate(partitions):
                if _has_zstd(p["records"]):
                    early[(position, index)] = _refused(
                        {"name": name, "partition_data": [p]},
                        Errors.UNSUPPORTED_COMPRESSION_TYPE, message)["partition_responses"][0]
        appended = [p for index, p in enumerate(partitions) if (position, index) not in early]
        if not appended:
            answers[position] = {"name": name, "partition_responses": [
                early[(position, index)] for index in range(len(partitions))]}
            continue
        known = image.topics.get_by_name(name)
        # model_construct: the records are the client's bytes, validated by the log itself.
        kept.append((position, ProduceTopicData.model_construct(
            name=name, partition_count=len(known.partitions) if known is not None else 1,
            partitions=tuple(ProducePartitionData.model_construct(
                index=p["index"], records=p["records"] or b"") for p in appended))))
    if kept:
        timeout_ms = min(max(body["timeout_ms"], 0), MAX_TIMEOUT_MS)
        response = await runtime.replica_manager.produce(ProduceRequest.model_construct(
            transactional_id=transactional_id, acks=acks, timeout_ms=timeout_ms,
            topics=tuple(topic for _, topic in kept)))
        for (position, _), answered in zip(kept, response.topics, strict=True):
            results = iter(answered.partitions)
            answers[position] = {"name": answered.name, "partition_responses": [
                early[(position, index)] if (position, index) in early
                else _partition_answer(next(results))
                for index in range(len(topics[position]["partition_data"]))]}
    return None if acks == 0 else _response(topics, answers)


def _response(topics: list[dict[str, Any]], answers: dict[int, dict[str, Any]]
              ) -> dict[str, Any]:
    return {"responses": [answers[position] for position in range(len(topics))],
            "throttle_time_ms": 0}
