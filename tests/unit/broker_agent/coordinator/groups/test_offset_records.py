"""The offsets-log record encoding, range merging and the log fold."""

from __future__ import annotations

from chunkraft.broker_agent.coordinator.groups.offset_records import (
    CommittedOffset,
    OffsetKey,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    merge_commit,
    merge_ranges,
)
from chunkraft.broker_agent.coordinator.groups.offsets_state import OffsetsState
from chunkraft.dataplane.record_batch import build_batch, build_control_batch

KEY = OffsetKey("g", "orders", 2)


def test_key_and_value_round_trip() -> None:
    value = CommittedOffset(42, 3, "meta", ((0, 9, 40), (10, 20, 42)), 1234)
    assert decode_key(encode_key(KEY)) == KEY
    assert decode_value(encode_value(value)) == value
    assert encode_value(None) is None and decode_value(None) is None


def test_unknown_records_are_skipped() -> None:
    assert decode_key(b'{"type": "group", "group": "g"}') is None
    assert decode_key(b"not json") is None
    assert decode_value(b"{}") is None


def test_ranges_overwrite_only_what_they_cover() -> None:
    stored = ((0, 99, 10),)
    assert merge_ranges(stored, ((50, 59, 30),)) == ((0, 49, 10), (50, 59, 30), (60, 99, 10))
    assert merge_ranges(((0, 49, 5), (50, 99, 7)), ((0, 49, 8),)) == ((0, 49, 8), (50, 99, 7))
    assert merge_ranges((), ((3, 4, 1),)) == ((3, 4, 1),)


def test_a_range_commit_merges_and_a_whole_commit_replaces() -> None:
    first = merge_commit(None, CommittedOffset(7, range_offsets=((0, 49, 7),)))
    both = merge_commit(first, CommittedOffset(12, range_offsets=((50, 99, 12),)))
    assert both.range_offsets == ((0, 49, 7), (50, 99, 12))
    assert both.offset == 7  # the smallest: below it every committed range is consumed
    whole = merge_commit(both, CommittedOffset(20))
    assert whole == CommittedOffset(20)


def _records(*entries: tuple[OffsetKey, CommittedOffset | None]) -> list[
        tuple[bytes, bytes | None, int]]:
    return [(encode_key(k), encode_value(v), 1) for k, v in entries]


def test_the_fold_applies_commits_and_settles_transactions() -> None:
    state = OffsetsState()
    log = build_batch(_records((KEY, CommittedOffset(5))), base_offset=0)
    log += build_batch(_records((OffsetKey("g", "orders", 3), CommittedOffset(9))),
                       base_offset=1, producer_id=77, producer_epoch=0, transactional=True)
    log += build_batch(_records((OffsetKey("g", "orders", 4), CommittedOffset(11))),
                       base_offset=2, producer_id=88, producer_epoch=0, transactional=True)
    state.apply_bytes(log)
    assert state.offsets_of("g") == {("orders", 2): CommittedOffset(5)}
    assert state.has_pending("g") and state.has_pending("g", [("orders", 3)])
    assert not state.has_pending("g", [("orders", 2)])
    markers = build_control_batch(True, producer_id=77, producer_epoch=0, base_offset=3,
                                  timestamp_ms=1)
    markers += build_control_batch(False, producer_id=88, producer_epoch=0, base_offset=4,
                                   timestamp_ms=1)
    state.apply_bytes(log + markers)  # the batches already folded are skipped
    assert state.offsets_of("g") == {("orders", 2): CommittedOffset(5),
                                     ("orders", 3): CommittedOffset(9)}
    assert not state.has_pending("g")
    assert state.next_offset == 5
    state.apply_bytes(build_batch(_records((KEY, None)), base_offset=5))
    assert state.offsets_of("g") == {("orders", 3): CommittedOffset(9)}
