"""The workload's pieces that need no cluster: answers read as the history records them,
requests as the v1 API takes them, and the operation mix."""

from __future__ import annotations

import random
import time

import pytest

from chunkraft.chaos.history import (
    CreatePartitions,
    CreateTopic,
    CutChunk,
    Describe,
    HistoryRecorder,
    MoveChunk,
    TopicView,
)
from chunkraft.chaos.workload import (
    CUT_TIMESTAMP_BASE,
    WorkloadConfig,
    WriteAnswer,
    _Client,
    _item_error,
    _request,
    error_name,
    topic_view,
)

CONFIG = WorkloadConfig(urls=("http://198.18.0.1:9092",), token="t", cluster_id="c",
                        history="/dev/null", seconds=1.0)


def test_a_config_survives_its_json() -> None:
    assert WorkloadConfig.from_json(CONFIG.to_json()) == CONFIG


def test_a_missing_topic_reads_as_none() -> None:
    assert topic_view({"error_code": 3, "name": "a", "partitions": []}) is None


def test_a_topic_reads_as_its_id_partitions_and_chunks_with_move_targets() -> None:
    topic = {"error_code": 0, "name": "a", "topic_id": "id-a", "partitions": [
        {"partition_index": 1, "start_offset": 0, "replica_nodes": [2, 1], "chunks": []},
        {"partition_index": 0, "start_offset": 20, "replica_nodes": [3, 1], "chunks": [
            {"start_offset": 10, "replicas": [1, 2, 3], "removing_replicas": [3]},
            {"start_offset": 0, "replicas": [2, 1], "removing_replicas": []},
            {"start_offset": 20, "replicas": [3, 1]},
        ]},
    ]}
    assert topic_view(topic) == TopicView("id-a", 2, (
        ((0, (1, 2)), (10, (1, 2)), (20, (1, 3))),
        ((0, (1, 2)),),
    ))


def test_requests_are_the_v1_bodies_and_cuts_carry_rising_timestamps() -> None:
    path, body = _request(CreateTopic("a", 2, 2))
    assert path == "/create-topics"
    assert body["topics"][0] == {"name": "a", "num_partitions": 2, "replication_factor": 2}
    assert _request(CreatePartitions("a", 3))[1]["topics"][0]["count"] == 3
    path, body = _request(CutChunk("a", 1, 15, (1, 2)))
    item = body["topics"][0]["partitions"][0]
    assert path == "/create-chunks"
    assert (item["prev_stop_offset"], item["start_offset"]) == (14, 15)
    assert item["start_timestamp"] == CUT_TIMESTAMP_BASE + 15
    assert item["start_timestamp"] > time.time() * 1000   # after any partition's creation
    path, body = _request(MoveChunk("a", 0, 10, (2, 3)))
    assert path == "/alter-chunk-assignments"
    assert body["chunks"][0]["broker_ids"] == [2, 3]


@pytest.mark.parametrize(("op", "body", "code"), [
    (CreateTopic("a", 1, 1), {"topics": [{"error_code": 36}]}, 36),
    (CreatePartitions("a", 2), {"results": [{"error_code": 37}]}, 37),
    (CutChunk("a", 0, 1, (1,)), {"error_code": 0, "topics": [
        {"partitions": [{"error_code": 10000}]}]}, 10000),
    (CutChunk("a", 0, 1, (1,)), {"error_code": 41, "topics": []}, 41),
    (MoveChunk("a", 0, 0, (1,)), {"results": [{"error_code": 10001}]}, 10001),
])
def test_the_item_error_is_read_where_each_answer_keeps_it(op, body, code) -> None:  # type: ignore[no-untyped-def]
    assert _item_error(body, op) == code


def test_error_names_are_kafkas() -> None:
    assert error_name(36) == "TOPIC_ALREADY_EXISTS"
    assert error_name(10001) == "UNKNOWN_CHUNK"
    assert error_name(31_999) == "UNKNOWN_31999"


def test_a_client_reads_a_topic_before_it_writes_it_and_stays_in_the_pool() -> None:
    with HistoryRecorder() as recorder:
        client = _Client(0, CONFIG, recorder, random.Random(1), time.monotonic())
        pool = client.pool()
        assert len(pool) == CONFIG.topics_per_pool
        ops = [client.choose() for _ in range(50)]
        assert all(isinstance(o, Describe) and o.topic in pool for o in ops)
        for topic in pool:
            client.seen[topic] = TopicView("id", 2, (((0, None), (5, (1, 2))), ((0, None),)))
        kinds = {type(client.choose()).__name__ for _ in range(400)}
        assert kinds == {"Describe", "CreateTopic", "CreatePartitions", "CutChunk", "MoveChunk"}


class _Answers:
    """Stands in for the HTTP client: each write returns the next answer."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)

    def write(self, path: str, body: object, key: str) -> object:
        return self.answers.pop(0)


def _client_about_to_write(recorder: HistoryRecorder) -> _Client:
    client = _Client(0, CONFIG, recorder, random.Random(2), time.monotonic())
    client.choose = lambda: CreatePartitions("a", 3)  # type: ignore[method-assign]
    return client


@pytest.mark.parametrize(("answer", "outcome", "told"), [
    (WriteAnswer("ok", {"results": [{"error_code": 0}]}, 7, False), "ok", None),
    (WriteAnswer("ok", {"results": [{"error_code": 37}]}, 7, False), "fail",
     "INVALID_PARTITIONS"),
    (WriteAnswer("fail", "INVALID_REQUEST", 7, False), "fail", "INVALID_REQUEST"),
    # After an attempt of unknown outcome a refusal proves nothing: that attempt may commit.
    (WriteAnswer("ok", {"results": [{"error_code": 37}]}, 7, True), "info",
     "INVALID_PARTITIONS after an attempt of unknown outcome"),
    (WriteAnswer("fail", "INVALID_REPLICATION_FACTOR", 7, True), "info",
     "INVALID_REPLICATION_FACTOR after an attempt of unknown outcome"),
    (WriteAnswer("ok", {"results": [{"error_code": 7}]}, 7, False), "info",
     "REQUEST_TIMED_OUT"),
    (WriteAnswer("info", "no answer", None, True), "info", "no answer"),
])
def test_what_a_write_came_to_is_recorded_as_what_the_client_knows(
        answer: WriteAnswer, outcome: str, told: str | None) -> None:
    with HistoryRecorder() as recorder:
        client = _client_about_to_write(recorder)
        client.step(_Answers(answer))  # type: ignore[arg-type]
        [done] = recorder.operations()
        assert done.outcome == outcome
        assert (done.error if outcome != "ok" else None) == told
        # A client that met an unknown outcome goes on as a new process.
        assert client.process == ("0.1" if outcome == "info" else "0.0")
        assert client.min_offset == (-1 if answer.outcome == "info" else 7)
