"""PendingRecord's callbacks: each runs once, whichever thread finishes the batch and
whenever the callback was added."""

from __future__ import annotations

import threading

from chunkraft.client import producer_batches
from chunkraft.client.producer_batches import PendingRecord, ProducerBatch


def _record() -> tuple[ProducerBatch, PendingRecord]:
    batch = ProducerBatch("orders", 0, 1)
    record = PendingRecord("orders", 0, b"k", b"v", 1000, (), False, 1)
    batch.add(record)
    return batch, record


def test_a_callback_added_as_the_batch_finishes_on_another_thread_still_runs() -> None:
    batch, record = _record()
    ran: list[PendingRecord] = []
    # The caller is inside add_done_callback (it saw the record not done) when the sender
    # finishes the batch: the sender must not skip the callback the caller is adding.
    with producer_batches._CALLBACKS_LOCK:
        assert not record.done()
        sender = threading.Thread(target=batch._finish, args=(0, None))
        sender.start()
        sender.join(0.2)
        record._callbacks = [ran.append]
    sender.join(5)
    assert not sender.is_alive()
    assert ran == [record]


def test_callbacks_before_and_after_the_outcome_each_run_once() -> None:
    batch, record = _record()
    ran: list[str] = []
    record.add_done_callback(lambda _: ran.append("before"))
    batch._finish(7, None)
    record.add_done_callback(lambda _: ran.append("after"))
    batch._finish(8, None)  # a second outcome changes nothing
    assert ran == ["before", "after"]
    assert record.get(1).offset == 7
