"""The console's event summaries: what a committed batch touched, decoded once per node."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from chunkraft.console import events
from chunkraft.console.events import BatchSummaries, batch_topics
from chunkraft.controller.raft.state_machine import CommittedBatch
from chunkraft.records import TopicRecord, encode_record
from chunkraft.records.cluster_records import NoOpRecord

ORDERS = uuid.UUID(int=7)
PAYMENTS = uuid.UUID(int=8)


def _batch(base_offset: int, *records: object) -> CommittedBatch:
    return CommittedBatch(base_offset, 1, 0, tuple(encode_record(r) for r in records))


BATCHES = (
    _batch(0, TopicRecord("orders", ORDERS)),
    _batch(1, NoOpRecord()),
    _batch(2, TopicRecord("payments", PAYMENTS), TopicRecord("orders", ORDERS)),
)


def test_a_batch_names_its_topics_and_whether_anything_else_changed() -> None:
    assert batch_topics(BATCHES[0]).ids == {ORDERS}
    assert batch_topics(BATCHES[0]).names == {ORDERS: "orders"}
    assert batch_topics(BATCHES[0]).other is False
    assert batch_topics(BATCHES[1]).ids == frozenset()
    assert batch_topics(BATCHES[1]).other is True


def test_the_shared_summaries_answer_what_decoding_answers() -> None:
    uncached = BatchSummaries(capacity=0).touched(BATCHES)  # every batch decoded afresh
    assert BatchSummaries().touched(BATCHES) == uncached
    assert uncached == ({ORDERS, PAYMENTS}, {ORDERS: "orders", PAYMENTS: "payments"}, True)


def test_each_batch_is_decoded_once_however_many_streams_ask(
        monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[int] = []

    def counting(batch: CommittedBatch) -> events.BatchTopics:
        decoded.append(batch.base_offset)
        return batch_topics(batch)

    monkeypatch.setattr(events, "batch_topics", counting)
    summaries = BatchSummaries()
    assert not summaries.known(BATCHES)
    for _stream in range(5):
        summaries.touched(BATCHES)
    assert sorted(decoded) == [0, 1, 2]
    assert summaries.known(BATCHES)


def test_the_summaries_keep_only_the_last_batches_asked_about() -> None:
    summaries = BatchSummaries(capacity=2)
    summaries.touched(BATCHES)
    assert summaries.known(BATCHES[1:])
    assert not summaries.known(BATCHES[:1])


def test_streams_asking_at_the_same_moment_share_one_decoding(
        monkeypatch: pytest.MonkeyPatch) -> None:
    decoded: list[int] = []
    started = threading.Event()

    def slow(batch: CommittedBatch) -> events.BatchTopics:
        decoded.append(batch.base_offset)
        started.set()
        time.sleep(0.2)  # the others ask meanwhile
        return batch_topics(batch)

    monkeypatch.setattr(events, "batch_topics", slow)
    summaries = BatchSummaries()
    answers: list[object] = []
    first = threading.Thread(target=lambda: answers.append(summaries.touched(BATCHES[:1])))
    first.start()
    assert started.wait(5)
    others = [threading.Thread(target=lambda: answers.append(summaries.touched(BATCHES[:1])))
              for _ in range(4)]
    for thread in others:
        thread.start()
    for thread in [first, *others]:
        thread.join(10)
    assert decoded == [0]
    assert answers == [({ORDERS}, {ORDERS: "orders"}, False)] * 5
