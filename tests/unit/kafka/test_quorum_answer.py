"""DescribeQuorum's answer (chunkraft.kafka.quorum_answer) from a QuorumStatus: the leader's
view of its voters, a follower's and the wrong partition's refusals, authorization, version
2's nodes, and that every version encodes and reads with kafka-python's class."""

from __future__ import annotations

import dataclasses
import importlib
import time
import uuid
from typing import Any

import pytest

from chunkraft.controller.raft.log import QuorumStatus, VoterStatus
from chunkraft.kafka.codec.messages import decode, encode
from chunkraft.kafka.quorum_answer import METADATA_TOPIC, describe_quorum_answer

NOT_LEADER_OR_FOLLOWER = 6
UNKNOWN_TOPIC_OR_PARTITION = 3
CLUSTER_AUTHORIZATION_FAILED = 31

LEADER = QuorumStatus(
    node_id=1, state="leader", leader_id=1, epoch=7, has_quorum=True, commit_index=42,
    last_applied_index=42, high_watermark=43,
    voters=(VoterStatus(1, "c1:9093", 42, 0, None, True),
            VoterStatus(2, "c2:9093", 40, 2, 150, True),
            VoterStatus(3, "c3:9093", None, None, None, False)),
    failure=None)
FOLLOWER = dataclasses.replace(LEADER, node_id=2, state="follower", leader_id=1)
REQUEST = {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}
ENDPOINTS = [(2, "CONTROLLER_KAFKA", "c2.test", 9094), (1, "CONTROLLER_KAFKA", "c1.test", 9094),
             (1, "SSL", "c1.test", 9095)]


def partition_of(answer: dict[str, Any]) -> dict[str, Any]:
    (topic,) = answer["topics"]
    (partition,) = topic["partitions"]
    return dict(partition)


def test_the_leader_answers_its_voters_progress() -> None:
    before = int(time.time() * 1000)
    answer = describe_quorum_answer(LEADER, REQUEST, allowed=True, endpoints=[])
    after = int(time.time() * 1000)
    assert answer["error_code"] == 0
    assert answer["topics"][0]["topic_name"] == METADATA_TOPIC
    partition = partition_of(answer)
    assert (partition["error_code"], partition["leader_id"], partition["leader_epoch"],
            partition["high_watermark"]) == (0, 1, 7, 42)
    assert partition["observers"] == []
    me, caught_up, silent = partition["current_voters"]
    assert (me["replica_id"], me["log_end_offset"]) == (1, 42)
    assert before <= me["last_fetch_timestamp"] <= after
    assert before <= me["last_caught_up_timestamp"] <= after
    assert (caught_up["replica_id"], caught_up["log_end_offset"]) == (2, 40)
    assert before - 150 <= caught_up["last_fetch_timestamp"] <= after - 150
    # Behind by 2: caught up last when last heard from.
    assert caught_up["last_caught_up_timestamp"] == caught_up["last_fetch_timestamp"]
    assert (silent["replica_id"], silent["log_end_offset"], silent["last_fetch_timestamp"],
            silent["last_caught_up_timestamp"]) == (3, -1, -1, -1)
    assert {voter["replica_directory_id"] for voter in partition["current_voters"]} == {
        uuid.UUID(int=0)}


def test_a_follower_answers_not_leader_naming_the_leader() -> None:
    partition = partition_of(describe_quorum_answer(FOLLOWER, REQUEST, allowed=True,
                                                    endpoints=[]))
    assert partition["error_code"] == NOT_LEADER_OR_FOLLOWER
    assert (partition["leader_id"], partition["leader_epoch"]) == (1, 7)
    assert partition["current_voters"] == [] and partition["high_watermark"] == -1
    assert "not the leader" in partition["error_message"]
    leaderless = dataclasses.replace(FOLLOWER, state="candidate", leader_id=None)
    assert partition_of(describe_quorum_answer(leaderless, REQUEST, allowed=True,
                                               endpoints=[]))["leader_id"] == -1


@pytest.mark.parametrize(("topic", "index"), [("orders", 0), (METADATA_TOPIC, 1)])
def test_another_partition_is_unknown(topic: str, index: int) -> None:
    request = {"topics": [{"topic_name": topic, "partitions": [{"partition_index": index}]}]}
    answer = describe_quorum_answer(LEADER, request, allowed=True, endpoints=[])
    assert answer["topics"][0]["topic_name"] == topic
    partition = partition_of(answer)
    assert (partition["error_code"], partition["partition_index"]) == (
        UNKNOWN_TOPIC_OR_PARTITION, index)
    assert METADATA_TOPIC in partition["error_message"]


def test_each_partition_asked_is_answered_in_order() -> None:
    request = {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [
        {"partition_index": 1}, {"partition_index": 0}]}]}
    partitions = describe_quorum_answer(LEADER, request, allowed=True,
                                        endpoints=[])["topics"][0]["partitions"]
    assert [(p["partition_index"], p["error_code"]) for p in partitions] == [
        (1, UNKNOWN_TOPIC_OR_PARTITION), (0, 0)]


def test_without_describe_on_the_cluster_the_whole_request_fails() -> None:
    answer = describe_quorum_answer(LEADER, REQUEST, allowed=False, endpoints=ENDPOINTS)
    assert answer["error_code"] == CLUSTER_AUTHORIZATION_FAILED
    assert answer["topics"] == [] and answer["nodes"] == []
    assert answer["error_message"]


def test_nodes_group_each_controllers_listeners() -> None:
    answer = describe_quorum_answer(LEADER, REQUEST, allowed=True, endpoints=ENDPOINTS)
    assert answer["nodes"] == [
        {"node_id": 1, "listeners": [{"name": "CONTROLLER_KAFKA", "host": "c1.test",
                                      "port": 9094},
                                     {"name": "SSL", "host": "c1.test", "port": 9095}]},
        {"node_id": 2, "listeners": [{"name": "CONTROLLER_KAFKA", "host": "c2.test",
                                      "port": 9094}]}]


@pytest.mark.parametrize("version", range(3))
@pytest.mark.parametrize("status", [LEADER, FOLLOWER])
def test_every_version_encodes_and_reads_back(version: int, status: QuorumStatus) -> None:
    answer = describe_quorum_answer(status, REQUEST, allowed=True, endpoints=ENDPOINTS)
    wire = encode("DescribeQuorumResponse", version, answer)
    ours = partition_of(decode("DescribeQuorumResponse", version, wire))
    assert ours["leader_id"] == 1
    classes = importlib.import_module("tests.support.kafka_messages").kafka_python_classes()
    theirs = classes["DescribeQuorumResponse"].decode(wire, version=version)
    (topic,) = theirs.topics
    (partition,) = topic.partitions
    assert partition.error_code == (0 if status is LEADER else NOT_LEADER_OR_FOLLOWER)
    assert [v.replica_id for v in partition.current_voters] == (
        [1, 2, 3] if status is LEADER else [])
    if version >= 2:
        assert [node.node_id for node in theirs.nodes] == [1, 2]
