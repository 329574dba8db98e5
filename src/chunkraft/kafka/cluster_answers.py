"""Metadata 0-12 and DescribeCluster 0-1 answered from a metadata image.

Both brokers and controllers answer these from their own committed image, as Kafka brokers
answer Metadata from their metadata cache:

- **Brokers** shown are the unfenced registered brokers with an endpoint on the listener of the
  same name as the connection's (Kafka's rule: a client on ``SASL_PLAINTEXT`` is told every
  broker's ``SASL_PLAINTEXT`` address); a broker without one is left out.
- **Topics**: null (or, at v0, an empty list) asks for every topic; those the principal may not
  DESCRIBE are left out, and one named in the request that it may not describe answers
  TOPIC_AUTHORIZATION_FAILED, whether it exists or not (the REST Metadata's rule). Topics are
  never created by a Metadata request (``allow_auto_topic_creation`` is ignored: chunkraft has
  no auto-creation), so an unknown one answers UNKNOWN_TOPIC_OR_PARTITION.
- **Partitions** show the active chunk (leader, epoch, ISR); the replicas are the active
  chunk's followed by the brokers of the inactive chunks (:func:`replica_nodes`: a stock
  consumer fetches an inactive chunk from the broker a fetch answer names only if it is one of
  them), the offline replicas those of them not live. A leader that is fenced or unregistered
  answers LEADER_NOT_AVAILABLE for that partition.
- ``controller_id`` is a broker that accepts admin requests (this broker, or the first live one
  for a controller): Kafka's KRaft brokers answer the same way, since clients send admin
  requests to the "controller" they find here and a broker forwards them to the quorum.
- The chunks of a partition (KIP-1114) are sent in a tagged field of the partition, only when
  the request's own tagged field ``include_chunks`` asks for them (flexible versions, 9+).
"""

from __future__ import annotations

import functools
import uuid
from typing import Any

from chunkraft.controller.image import MetadataImage, TopicImage
from chunkraft.error_codes import Errors
from chunkraft.kafka.metadata_bytes import TopicBytesCache, splice, topic_encoder
from chunkraft.kafka.server.requests import KafkaSession
from chunkraft.protocol.acls import AclOperation, AclResourceType
from chunkraft.records import ChunkRecord, PartitionRecord
from chunkraft.records.uuids import parse_kafka_uuid
from chunkraft.security.authorizer import Authorizer

__all__ = ["ZERO_UUID", "broker_nodes", "describe_cluster_answer", "metadata_answer",
           "metadata_answer_bytes", "replica_nodes"]

ZERO_UUID = uuid.UUID(int=0)
_NOT_REQUESTED = -(2**31)
"""Kafka's value of ``*_authorized_operations`` when they were not asked for."""


def broker_nodes(image: MetadataImage, listener: str) -> list[dict[str, Any]]:
    """The unfenced brokers with an endpoint named ``listener``, as Metadata's brokers."""
    nodes = []
    for broker in image.brokers:
        if broker.fenced:
            continue
        for endpoint in broker.end_points:
            if endpoint.name == listener:
                nodes.append({"node_id": broker.broker_id, "host": endpoint.host,
                              "port": endpoint.port, "rack": broker.rack})
                break
    return nodes


def _admin_node(image: MetadataImage, nodes: list[dict[str, Any]], self_id: int | None) -> int:
    if self_id is not None:
        return self_id
    return nodes[0]["node_id"] if nodes else -1


def replica_nodes(p: PartitionRecord, chunks: tuple[ChunkRecord, ...]) -> list[int]:
    """Metadata's replicas of a partition: the active chunk's, then each broker holding or
    assigned an inactive chunk, in chunk order, each once. A stock consumer reads from the
    broker a fetch answer names (``preferred_read_replica``) only if it is listed here (the
    Java client, kafka-python); the ISR stays the active chunk's."""
    nodes = dict.fromkeys(p.replicas)
    for chunk in chunks:
        nodes.update(dict.fromkeys((*chunk.replicas, *chunk.isr)))
    return list(nodes)


def _partition(p: PartitionRecord, online: frozenset[int], chunks: tuple[ChunkRecord, ...],
               with_chunks: bool) -> dict[str, Any]:
    replicas = replica_nodes(p, chunks)
    answer: dict[str, Any] = {
        "error_code": 0 if p.leader in online else Errors.LEADER_NOT_AVAILABLE.code,
        "partition_index": p.partition_id, "leader_id": p.leader,
        "leader_epoch": p.leader_epoch, "replica_nodes": replicas,
        "isr_nodes": list(p.isr),
        "offline_replicas": [r for r in replicas if r not in online]}
    if with_chunks:
        answer["chunks"] = [
            {"start_offset": c.start_offset, "start_timestamp": c.start_timestamp,
             "stop_offset": c.stop_offset, "end_offset": c.end_offset,
             "chunk_epoch": c.chunk_epoch, "replicas": list(c.replicas), "isr": list(c.isr)}
            for c in chunks]
        answer["active_chunk_start_offset"] = p.start_offset
    return answer


def _topic(topic: TopicImage, online: frozenset[int], with_chunks: bool) -> dict[str, Any]:
    chunk_map = topic.chunks
    return {"error_code": 0, "name": topic.name, "topic_id": topic.topic_id,
            "is_internal": False,
            "partitions": [_partition(topic.partitions[i], online, chunk_map.get(i, ()),
                                      with_chunks) for i in sorted(topic.partitions)],
            "topic_authorized_operations": _NOT_REQUESTED}


def _unknown(error: Errors, name: str | None, topic_id: uuid.UUID) -> dict[str, Any]:
    return {"error_code": error.code, "name": name, "topic_id": topic_id, "is_internal": False,
            "partitions": [], "topic_authorized_operations": _NOT_REQUESTED}


def _selected(image: MetadataImage, request: dict[str, Any], version: int,
              session: KafkaSession, authorizer: Authorizer | None
              ) -> list[TopicImage | dict[str, Any]]:
    """The topics the answer shows, in order: a TopicImage to describe, or an error entry."""
    principal = session.principal
    assert principal is not None
    check = None
    if authorizer is not None and not authorizer.is_super_user(principal):
        def check(name: str) -> bool:
            return authorizer.authorize(image, principal, AclOperation.DESCRIBE,
                                        AclResourceType.TOPIC, name)

    wanted = request.get("topics")
    if wanted is None or (version == 0 and not wanted):
        return [topic for topic in image.topics if check is None or check(topic.name)]
    shown: list[TopicImage | dict[str, Any]] = []
    seen: set[tuple[Any, Any]] = set()
    for entry in wanted:
        name, topic_id = entry.get("name"), entry.get("topic_id") or ZERO_UUID
        if (name, topic_id) in seen:
            continue
        seen.add((name, topic_id))
        found = (image.topics.get(topic_id) if topic_id != ZERO_UUID
                 else image.topics.get_by_name(name) if name else None)
        shown_name = found.name if found is not None else name
        if check is not None and shown_name is not None and not check(shown_name):
            # Asked by id, the name is what is protected: Kafka answers it null.
            shown.append(_unknown(Errors.TOPIC_AUTHORIZATION_FAILED,
                                  None if topic_id != ZERO_UUID else shown_name, topic_id))
        elif found is not None:
            shown.append(found)
        elif topic_id != ZERO_UUID:
            shown.append(_unknown(Errors.UNKNOWN_TOPIC_ID, name, topic_id))
        else:
            shown.append(_unknown(Errors.UNKNOWN_TOPIC_OR_PARTITION, name, ZERO_UUID))
    return shown


def _online(image: MetadataImage) -> frozenset[int]:
    return frozenset(broker.broker_id for broker in image.brokers if not broker.fenced)


def _head(image: MetadataImage, session: KafkaSession, cluster_id: str,
          self_id: int | None) -> dict[str, Any]:
    nodes = broker_nodes(image, session.listener)
    return {"throttle_time_ms": 0, "brokers": nodes, "cluster_id": cluster_id,
            "controller_id": _admin_node(image, nodes, self_id), "topics": [],
            "cluster_authorized_operations": _NOT_REQUESTED}


def _with_chunks(request: dict[str, Any], version: int) -> bool:
    return version >= 9 and bool(request.get("include_chunks"))


def metadata_answer(image: MetadataImage, request: dict[str, Any], version: int,
                    session: KafkaSession, authorizer: Authorizer | None, *,
                    cluster_id: str, self_id: int | None) -> dict[str, Any]:
    """The Metadata response (``version``) to ``request`` from ``image`` (module docstring),
    as a dict; :func:`metadata_answer_bytes` writes the same answer encoded, faster."""
    online = _online(image)
    with_chunks = _with_chunks(request, version)
    topics = [_topic(entry, online, with_chunks) if isinstance(entry, TopicImage) else entry
              for entry in _selected(image, request, version, session, authorizer)]
    return _head(image, session, cluster_id, self_id) | {"topics": topics}


def metadata_answer_bytes(image: MetadataImage, request: dict[str, Any], version: int,
                          session: KafkaSession, authorizer: Authorizer | None,
                          cache: TopicBytesCache, *, cluster_id: str,
                          self_id: int | None) -> bytes:
    """:func:`metadata_answer`'s answer encoded at ``version``, each described topic's bytes
    from ``cache`` (:mod:`chunkraft.kafka.metadata_bytes`)."""
    online = _online(image)
    with_chunks = _with_chunks(request, version)
    encoder = topic_encoder(version)
    pieces = []
    for entry in _selected(image, request, version, session, authorizer):
        if isinstance(entry, TopicImage):
            pieces.append(cache.topic(entry, online, version, with_chunks,
                                      functools.partial(_topic, entry, online, with_chunks)))
        else:
            pieces.append(encoder(entry))
    return splice(_head(image, session, cluster_id, self_id), version, pieces)


ENDPOINT_BROKERS = 1
ENDPOINT_CONTROLLERS = 2


def describe_cluster_answer(image: MetadataImage, request: dict[str, Any], version: int,
                            session: KafkaSession, *, cluster_id: str, self_id: int | None,
                            controllers: list[dict[str, Any]] | None) -> dict[str, Any]:
    """DescribeCluster: the brokers (endpoint type 1) on a broker, the controllers (type 2,
    KIP-919's ``--bootstrap-controller``) on a controller (``controllers`` given). As Kafka's
    answer: the other known type is MISMATCHED_ENDPOINT_TYPE (the Java admin's hint to use the
    other bootstrap option), an unknown type UNSUPPORTED_ENDPOINT_TYPE, and a controller asked
    at v0 (which can only mean brokers) INVALID_REQUEST."""
    asked = request.get("endpoint_type", ENDPOINT_BROKERS) if version >= 1 else ENDPOINT_BROKERS
    here = ENDPOINT_CONTROLLERS if controllers is not None else ENDPOINT_BROKERS
    base: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
                            "endpoint_type": asked, "cluster_id": cluster_id,
                            "controller_id": -1, "brokers": [],
                            "cluster_authorized_operations": _NOT_REQUESTED}
    if asked != here:
        what = "a controller" if controllers is not None else "a broker"
        if version == 0:
            error = Errors.INVALID_REQUEST
        elif asked in (ENDPOINT_BROKERS, ENDPOINT_CONTROLLERS):
            error = Errors.MISMATCHED_ENDPOINT_TYPE
        else:
            error = Errors.UNSUPPORTED_ENDPOINT_TYPE
        other = ("ask a broker for the brokers" if controllers is not None
                 else "ask a controller (--bootstrap-controller) for the controllers")
        return base | {"error_code": error.code,
                       "error_message": f"this is {what}, endpoint type {asked} was asked: "
                                        f"{other}"}
    if controllers is not None:
        leader = self_id if self_id is not None else -1
        return base | {"controller_id": leader, "brokers": controllers}
    nodes = broker_nodes(image, session.listener)
    return base | {"controller_id": _admin_node(image, nodes, self_id),
                   "brokers": [{"broker_id": n["node_id"], "host": n["host"],
                                "port": n["port"], "rack": n["rack"]} for n in nodes]}


def parse_topic_id(text: str | None) -> uuid.UUID:
    """A Kafka base64 topic id as a uuid (the zero uuid for None)."""
    return parse_kafka_uuid(text) if text else ZERO_UUID
