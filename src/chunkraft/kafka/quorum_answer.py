"""DescribeQuorum 0-2 on a controller: ``kafka-metadata-quorum --bootstrap-controller``.

The answer is the Raft quorum as the leader sees it, for Kafka's one metadata partition
``__cluster_metadata``-0: the leader, its epoch (the Raft term), the high watermark and each
voter's log end, in Raft indexes (the offsets of the Raft log, which is chunkraft's metadata
log), with each follower's last contact as ``last_fetch_timestamp`` (milliseconds since the
epoch; -1 when unknown). Only the leader knows its followers' progress, so a follower answers
NOT_LEADER_OR_FOLLOWER, as Kafka's controllers do (a client finds the leader with
DescribeCluster, whose ``controller_id`` is the active controller). The principal needs
DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED otherwise). Version 2 adds each voter's
Kafka listeners (``nodes``). A broker answers it too, from the quorum status of the controller
its channel reaches (the leader first), as Kafka's brokers forward DescribeQuorum.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from chunkraft.controller.raft.log import QuorumStatus, VoterStatus
from chunkraft.error_codes import Errors

__all__ = ["METADATA_TOPIC", "describe_quorum_answer", "status_from_json"]

METADATA_TOPIC = "__cluster_metadata"
_ZERO = uuid.UUID(int=0)


def _partition_error(error: Errors, message: str, leader: int | None, epoch: int
                     ) -> dict[str, Any]:
    return {"partition_index": 0, "error_code": error.code, "error_message": message,
            "leader_id": -1 if leader is None else leader, "leader_epoch": epoch,
            "high_watermark": -1, "current_voters": [], "observers": []}


def describe_quorum_answer(status: QuorumStatus, request: dict[str, Any], *, allowed: bool,
                           endpoints: list[tuple[int, str, str, int]]) -> dict[str, Any]:
    """The answer from this node's ``status``; ``endpoints`` are (node, listener, host, port)
    of the controllers' Kafka listeners, for version 2's ``nodes``."""
    if not allowed:
        return {"error_code": Errors.CLUSTER_AUTHORIZATION_FAILED.code,
                "error_message": "DescribeQuorum needs DESCRIBE on the cluster", "topics": [],
                "nodes": []}
    now_ms = int(time.time() * 1000)
    topics = []
    for topic in request.get("topics") or ():
        partitions = []
        for partition in topic.get("partitions") or ():
            index = partition.get("partition_index", 0)
            if topic.get("topic_name") != METADATA_TOPIC or index != 0:
                partitions.append(_partition_error(
                    Errors.UNKNOWN_TOPIC_OR_PARTITION,
                    f"the quorum's partition is {METADATA_TOPIC}-0", status.leader_id,
                    status.epoch) | {"partition_index": index})
                continue
            if status.state != "leader":
                partitions.append(_partition_error(
                    Errors.NOT_LEADER_OR_FOLLOWER,
                    f"controller {status.node_id} is not the leader (leader: "
                    f"{status.leader_id})", status.leader_id, status.epoch))
                continue
            voters = []
            for voter in status.voters:
                contact = voter.last_contact_ms_ago
                seen = -1 if contact is None else now_ms - contact
                voters.append({"replica_id": voter.node_id, "replica_directory_id": _ZERO,
                               "log_end_offset": -1 if voter.log_end_index is None
                               else voter.log_end_index,
                               "last_fetch_timestamp": now_ms if voter.node_id ==
                               status.node_id else seen,
                               "last_caught_up_timestamp": now_ms if voter.lag == 0 else seen})
            partitions.append({"partition_index": 0, "error_code": 0, "error_message": None,
                               "leader_id": status.node_id, "leader_epoch": status.epoch,
                               "high_watermark": status.commit_index,
                               "current_voters": voters, "observers": []})
        topics.append({"topic_name": topic.get("topic_name"), "partitions": partitions})
    nodes: dict[int, list[dict[str, Any]]] = {}
    for node, name, host, port in endpoints:
        nodes.setdefault(node, []).append({"name": name, "host": host, "port": port})
    return {"error_code": 0, "error_message": None, "topics": topics,
            "nodes": [{"node_id": node, "listeners": listeners}
                      for node, listeners in sorted(nodes.items())]}


def status_from_json(body: dict[str, Any]) -> QuorumStatus:
    """The QuorumStatus of a controller's ``GET /controller/v1/quorum`` answer (a broker
    answers DescribeQuorum from it, as Kafka's brokers forward DescribeQuorum)."""
    voters = tuple(VoterStatus(**{name: voter.get(name) for name in VoterStatus.__slots__})
                   for voter in body.get("voters", ()))
    known = {name: body[name] for name in QuorumStatus.__dataclass_fields__
             if name in body and name != "voters"}
    return QuorumStatus(**known, voters=voters)
