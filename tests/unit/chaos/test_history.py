"""The recorder, the JSON-lines file and the pairing of events into operations."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from chunkraft.chaos.history import (
    CreatePartitions,
    CreateTopic,
    CutChunk,
    Describe,
    Event,
    HistoryRecorder,
    MoveChunk,
    TopicView,
    event_from_json,
    event_to_json,
    pair,
    read_events,
    read_history,
)

VIEW = TopicView("id-a", 2, (((0, (1, 2)), (10, None)), ((0, None),)))


@pytest.mark.parametrize(
    "event",
    [
        Event("invoke", 1, 5, CreateTopic("a", 2, 3)),
        Event("ok", "w-1", 6, CreateTopic("a", 2, 3), "id-a"),
        Event("fail", 1, 7, CreatePartitions("a", 4), error="INVALID_PARTITIONS"),
        Event("info", 1, 8, CutChunk("a", 0, 10, (1, 2)), error="timed out"),
        Event("invoke", 1, 9, CutChunk("a", 0, 10)),
        Event("ok", 1, 9, MoveChunk("a", 0, 0, (3, 4))),
        Event("ok", 1, 10, Describe("a"), VIEW),
        Event("ok", 1, 11, Describe("a"), TopicView(None, 1)),
        Event("ok", 1, 12, Describe("a"), None),
    ],
)
def test_an_event_survives_its_json_line(event: Event) -> None:
    line = event_to_json(event)
    assert "\n" not in line
    assert event_from_json(line) == event


def test_the_recorder_writes_every_event_and_reads_them_back(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryRecorder(path) as rec:
        rec.invoke(1, CreateTopic("a", 1, 1))
        rec.invoke(2, Describe("a"))
        rec.ok(1, "id-a")
        rec.ok(2, VIEW)
        rec.invoke(1, CreatePartitions("a", 1))
        rec.fail(1, "INVALID_PARTITIONS")
        rec.invoke(3, CutChunk("a", 0, 5))
        rec.info(3, "timed out")
        rec.invoke(4, MoveChunk("a", 0, 0, (1,)))  # still in flight when the history ends
        memory = rec.operations()
    ops = read_history(path)
    assert ops == memory
    assert [(o.outcome, o.value, o.error) for o in ops] == [
        ("ok", "id-a", None), ("ok", VIEW, None), ("fail", None, "INVALID_PARTITIONS"),
        ("info", None, "timed out"), ("info", None, None),
    ]
    assert ops[0].invoke < ops[1].invoke < ops[0].complete  # type: ignore[operator]
    assert ops[3].complete is None and ops[4].complete is None


def test_concurrent_clients_record_an_ordered_well_paired_history(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    rec = HistoryRecorder(path)

    def client(process: int) -> None:
        for n in range(200):
            rec.invoke(process, CreatePartitions("t", n))
            rec.ok(process)

    threads = [threading.Thread(target=client, args=(p,)) for p in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec.close()
    events = read_events(path)
    assert len(events) == 8 * 200 * 2
    assert [e.time for e in events] == sorted(e.time for e in events)
    ops = pair(events)
    assert len(ops) == 1600 and all(o.outcome == "ok" for o in ops)
    for p in range(8):
        assert [o.op for o in ops if o.process == p] == [
            CreatePartitions("t", n) for n in range(200)
        ]


def test_a_torn_last_line_is_skipped_but_a_torn_middle_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    with HistoryRecorder(path) as rec:
        rec.invoke(1, Describe("a"))
        rec.ok(1, None)
    whole = path.read_text()
    path.write_text(whole + '{"type":"inv')
    assert len(read_events(path)) == 2
    path.write_text('{"type":"inv\n' + whole)
    with pytest.raises(ValueError):
        read_events(path)


def test_a_process_runs_one_operation_at_a_time() -> None:
    rec = HistoryRecorder()
    rec.invoke(1, Describe("a"))
    with pytest.raises(ValueError, match="already has an operation"):
        rec.invoke(1, Describe("b"))
    with pytest.raises(ValueError, match="no operation in flight"):
        rec.ok(2)
    with pytest.raises(ValueError, match="never invoked"):
        pair([Event("ok", 1, 1, Describe("a"))])
    with pytest.raises(ValueError, match="invoked twice"):
        pair([Event("invoke", 1, 1, Describe("a")), Event("invoke", 1, 2, Describe("a"))])
