"""``chunkraft topics`` (chunkraft.cli.topics): the replica-assignment format, Kafka's describe
layout with chunks, and usage mistakes (exit 1, the message and the usage line)."""

from __future__ import annotations

from typing import Any

import pytest

from chunkraft.cli.main import main
from chunkraft.cli.output import ToolError
from chunkraft.cli.topics import (
    chunks_of,
    format_partition,
    format_topic,
    parse_replica_assignment,
)

URL = "http://127.0.0.1:1"

PARTITION: dict[str, Any] = {
    "topic_name": "orders", "partition_id": 0, "leader_id": 2, "leader_epoch": 5,
    "partition_epoch": 7, "replica_ids": [2, 3, 1], "isr_ids": [2, 3],
    "adding_replica_ids": [], "removing_replica_ids": [], "start_offset": 100,
    "start_timestamp": 1700000000500, "prior_partition_epochs": [], "chunks_count": 2,
    "inactive_chunks": [{
        "topic_name": "orders", "partition_id": 0, "start_offset": 0, "stop_offset": 99,
        "end_offset": 104, "start_timestamp": 1700000000000, "chunk_epoch": 1,
        "is_active": False, "leader_id": -1, "replica_ids": [4, 2, 3], "isr_ids": [2, 3],
        "adding_replica_ids": [4], "removing_replica_ids": [1],
    }],
}


def test_replica_assignment_is_kafka_topics_format() -> None:
    assert parse_replica_assignment("0:1,1:2") == [[0, 1], [1, 2]]
    assert parse_replica_assignment(" 3 : 4 ") == [[3, 4]]
    assert parse_replica_assignment("5") == [[5]]


@pytest.mark.parametrize(("text", "message"), [
    ("0:1,,1:2", "partition 1 has nothing where a broker id should be"),
    ("0:x", "partition 0 has 'x' where a broker id should be"),
    ("0:-1", "partition 0 has '-1'"),
    ("1:1", "partition 0 lists a broker twice: 1,1"),
    ("0:1,2", "partition 1 has 1 replicas, partition 0 has 2"),
])
def test_replica_assignment_mistakes(text: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        parse_replica_assignment(text)


def test_the_topic_line_is_kafkas() -> None:
    topic = {"topic_name": "orders", "topic_id": "AbC", "partitions_count": 3,
             "replication_factor": 3}
    assert format_topic(topic) == ("Topic: orders\tTopicId: AbC\tPartitionCount: 3\t"
                                   "ReplicationFactor: 3\tConfigs: ")


def test_a_partition_then_its_chunks_inactive_first() -> None:
    assert format_partition(PARTITION).split("\n") == [
        "\tTopic: orders\tPartition: 0\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3",
        "\t\tChunk: inactive\tStartOffset: 0\tStopOffset: 99\tEndOffset: 104\t"
        "StartTimestamp: 1700000000000\tEpoch: 1\tReplicas: 4,2,3\tIsr: 2,3\t"
        "Adding Replicas: 4\tRemoving Replicas: 1",
        "\t\tChunk: active\tStartOffset: 100\tStartTimestamp: 1700000000500\tEpoch: 5\t"
        "Replicas: 2,3,1\tIsr: 2,3",
    ]


def test_a_moving_partition_without_a_leader_and_with_prior_epochs() -> None:
    partition = {**PARTITION, "leader_id": -1, "adding_replica_ids": [4],
                 "removing_replica_ids": [1], "inactive_chunks": None,
                 "prior_partition_epochs": [{"partition_id": 0, "leader_epoch": 3}]}
    assert format_partition(partition).split("\n")[0] == (
        "\tTopic: orders\tPartition: 0\tLeader: none\tReplicas: 2,3,1\tIsr: 2,3\t"
        "Adding Replicas: 4\tRemoving Replicas: 1\tPriorPartitionEpochs: 0@3")


def test_chunks_of_orders_inactive_by_offset_and_builds_the_active_one() -> None:
    later = {**PARTITION["inactive_chunks"][0], "start_offset": 50}
    chunks = chunks_of({**PARTITION, "inactive_chunks": [later, *PARTITION["inactive_chunks"]]})
    assert [c["start_offset"] for c in chunks] == [0, 50, 100]
    active = chunks[-1]
    assert active["is_active"] and active["stop_offset"] == -1 and active["chunk_epoch"] == 5
    assert active["leader_id"] == 2 and active["replica_ids"] == [2, 3, 1]


@pytest.mark.parametrize(("argv", "message"), [
    ([], "Command must include exactly one action: --list, --describe, --create, --alter "
         "or --delete"),
    (["--list", "--describe"], "exactly one action"),
    (["--create", "--partitions", "1", "--replication-factor", "1"], "--create needs --topic"),
    (["--create", "--topic", "t"], "--create needs --partitions and --replication-factor"),
    (["--create", "--topic", "t", "--partitions", "1", "--replica-assignment", "1"],
     "--replica-assignment can't be used with --partitions"),
    (["--alter", "--topic", "t"], "--alter needs --partitions"),
    (["--delete"], "--delete needs --topic"),
    (["--list", "--partitions", "3"], "Option --partitions can only be used with --create or "
                                      "--alter"),
    (["--describe", "--if-not-exists"], "Option --if-not-exists can only be used with "
                                        "--create"),
    (["--create", "--topic", "t", "--partitions", "0", "--replication-factor", "1"],
     "argument --partitions: must be at least 1, got 0"),
    (["--list", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_usage_mistakes_exit_1_with_the_message_and_usage(
        capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["topics", "--bootstrap-server", URL, *argv])
    captured = capsys.readouterr()
    assert exited.value.code == 1
    assert captured.out == ""
    assert captured.err.startswith("usage: chunkraft topics ")
    assert message in captured.err
    assert "Traceback" not in captured.err


def test_no_bootstrap_server_is_a_usage_mistake(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["topics", "--list"])
    assert exited.value.code == 1
    assert "the following arguments are required: --bootstrap-server" in capsys.readouterr().err


def test_a_bad_assignment_is_a_command_error(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["topics", "--bootstrap-server", URL, "--create", "--topic", "t",
                   "--replica-assignment", "1:a"])
    assert status == 1
    assert capsys.readouterr().err == (
        "Error while executing topic command : INVALID_REPLICA_ASSIGNMENT: "
        "--replica-assignment '1:a': partition 0 has 'a' where a broker id should be\n")


def test_a_bootstrap_server_that_is_not_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics", "--bootstrap-server", "localhost:9090", "--list"]) == 1
    assert capsys.readouterr().err == (
        "Error while executing topic command : bootstrap server 'localhost:9090' is not an "
        "http:// or https:// URL\n")


class FakeAdmin:
    """The two calls ``--alter --replica-assignment`` makes; ``answer`` is the result item."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.sent: list[Any] = []

    def __enter__(self) -> FakeAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def get_topic(self, name: str) -> dict[str, Any]:
        return {"topic_name": name, "partitions_count": 2}

    def create_partitions(self, items: list[dict[str, Any]], *,
                          validate_only: bool) -> list[dict[str, Any]]:
        self.sent.append(items)
        return [self.answer]


def _alter(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
           assignment: str, partitions: int,
           answer: dict[str, Any] | None = None) -> tuple[int, str, FakeAdmin]:
    admin = FakeAdmin(answer or {"error_code": 0})
    monkeypatch.setattr("chunkraft.cli.topics.open_client", lambda args: admin)
    status = main(["topics", "--bootstrap-server", URL, "--alter", "--topic", "t",
                   "--partitions", str(partitions), "--replica-assignment", assignment])
    return status, capsys.readouterr().err, admin


@pytest.mark.parametrize(("assignment", "partitions", "message"), [
    ("1:2,2:3,3:4", 4, "--replica-assignment lists 3 partitions; --partitions 4 needs 4 "
                       "(the 2 existing ones, then one per new partition)"),
    ("1:2,2:3,3:3", 3, "--replica-assignment '1:2,2:3,3:3': partition 2 lists a broker "
                       "twice: 3,3"),
    ("1:2,2:3,3", 3, "--replica-assignment '1:2,2:3,3': partition 2 has 1 replicas, "
                     "partition 0 has 2"),
])
def test_alter_refusals_name_the_kafka_error_as_the_controller_would(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        assignment: str, partitions: int, message: str) -> None:
    status, err, admin = _alter(monkeypatch, capsys, assignment, partitions)
    assert status == 1 and admin.sent == []  # refused before anything was sent
    assert err == ("Error while executing topic command : INVALID_REPLICA_ASSIGNMENT: "
                   f"{message}\n")


def test_a_controllers_refusal_prints_the_same_way(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    refused = {"error_code": 39, "error_name": "INVALID_REPLICA_ASSIGNMENT",
               "error_message": "The manual partition assignment includes broker 77, but no "
                                "such broker is registered."}
    status, err, admin = _alter(monkeypatch, capsys, "1:2,2:3,77:3", 3, refused)
    assert status == 1 and len(admin.sent) == 1
    assert err == ("Error while executing topic command : INVALID_REPLICA_ASSIGNMENT: The "
                   "manual partition assignment includes broker 77, but no such broker is "
                   "registered.\n")
