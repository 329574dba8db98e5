"""controller/operations/chunk_retention: which inactive chunks are past their topic's
retention, as records that remove them (a pure function of image and now)."""

from __future__ import annotations

import uuid
from typing import Any

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.chunk_retention import (
    delete_expired_chunks,
    expired_chunks,
)
from chunkraft.records import ChunkChangeRecord, ConfigRecord
from tests.unit.controller.operations.topic_support import (
    ORDERS_ID,
    apply,
    chunk,
    cluster,
    commit_valid,
    topic_of,
    with_topic,
)

HOUR_MS = 3600 * 1000
WEEK_MS = 7 * 24 * HOUR_MS


def _orders(active_start_ts: int = 10 * HOUR_MS, *configs: ConfigRecord,
            **active: Any) -> MetadataImage:
    """orders-0 on (0, 1): inactive chunks 0..99 (cut at 1 h), 100..199 (cut at 2 h), and the
    active chunk from 200, cut at ``active_start_ts``."""
    fields: dict[str, Any] = {"start_offset": 200, "start_timestamp": active_start_ts}
    fields.update(active)
    image = with_topic(cluster(range(3)), replicas=((0, 1),), **fields)
    image = apply(image, chunk(0, 99, 99, (0, 1), start_timestamp=0),
                  chunk(100, 199, 199, (0, 1), start_timestamp=HOUR_MS))
    return apply(image, *configs) if configs else image


def _starts(records: tuple[ChunkChangeRecord, ...]) -> list[int]:
    return [r.start_offset for r in records]


def test_a_chunk_goes_once_the_chunk_after_it_started_longer_ago_than_retention() -> None:
    image = _orders(10 * HOUR_MS, ConfigRecord(2, "orders", "retention.ms", str(3 * HOUR_MS)))
    # Chunk 0's records are older than 1 h (chunk 100's start), chunk 100's than 10 h.
    assert _starts(expired_chunks(image, 4 * HOUR_MS)) == []
    assert _starts(expired_chunks(image, 4 * HOUR_MS + 1)) == [0]
    assert _starts(expired_chunks(image, 13 * HOUR_MS + 1)) == [0, 100]
    assert _starts(expired_chunks(image, 10**15)) == [0, 100]  # never the active chunk


def test_the_removal_is_the_record_replay_takes_as_a_deleted_chunk() -> None:
    image = _orders(10 * HOUR_MS, ConfigRecord(2, "orders", "retention.ms", "1"))
    result = delete_expired_chunks(image, 20 * HOUR_MS)
    assert result.response.deleted == 2
    assert result.records[0] == ChunkChangeRecord(
        partition_id=0, topic_id=ORDERS_ID, start_offset=0, replicas=(), directories=None,
        isr=(), removing_replicas=(), adding_replicas=(), epoch=1)
    after = commit_valid(image, result)
    assert topic_of(after).chunks_of(0) == ()
    assert topic_of(after).partition(0) == topic_of(image).partition(0)


def test_retention_minus_one_keeps_everything_and_the_default_is_a_week() -> None:
    forever = _orders(10 * HOUR_MS, ConfigRecord(2, "orders", "retention.ms", "-1"))
    assert expired_chunks(forever, 10**15) == ()
    default = _orders(10 * HOUR_MS)
    assert _starts(expired_chunks(default, HOUR_MS + WEEK_MS)) == []
    assert _starts(expired_chunks(default, HOUR_MS + WEEK_MS + 1)) == [0]


def test_the_cluster_default_applies_and_the_topic_key_wins_over_it() -> None:
    default = ConfigRecord(4, "", "log.retention.ms", str(HOUR_MS))
    image = _orders(10 * HOUR_MS, default)
    assert _starts(expired_chunks(image, 2 * HOUR_MS + 1)) == [0]
    image = apply(image, ConfigRecord(2, "orders", "retention.ms", "-1"))
    assert expired_chunks(image, 10**15) == ()
    # A dynamic config of one broker is that broker's, not the topic's: ignored here.
    image = apply(_orders(10 * HOUR_MS), ConfigRecord(4, "0", "log.retention.ms", "1"))
    assert expired_chunks(image, 3 * HOUR_MS) == ()


def test_an_unknown_start_timestamp_expires_nothing_before_it() -> None:
    image = _orders(-1, ConfigRecord(2, "orders", "retention.ms", "1"))
    assert _starts(expired_chunks(image, 10**15)) == [0]  # chunk 100 is followed by -1


def test_the_last_chunk_waits_while_it_overlaps_the_active_chunk() -> None:
    # A transactional cut: the inactive chunk holds 100..209, the active one starts at 200.
    image = with_topic(cluster(range(3)), replicas=((0, 1),), start_offset=200,
                       start_timestamp=HOUR_MS)
    image = apply(image, chunk(0, 99, 99, (0, 1), start_timestamp=0),
                  chunk(100, 199, 209, (0, 1), start_timestamp=HOUR_MS // 2),
                  ConfigRecord(2, "orders", "retention.ms", "1"))
    assert _starts(expired_chunks(image, 10**15)) == [0]


def test_one_pass_deletes_at_most_its_limit_oldest_first_and_others_topics_too() -> None:
    other = uuid.UUID(int=0xF00)
    image = _orders(10 * HOUR_MS, ConfigRecord(2, "orders", "retention.ms", "1"))
    image = with_topic(image, "audit", replicas=((1, 2),), topic_id=other, start_offset=50,
                       start_timestamp=HOUR_MS)
    image = apply(image, chunk(0, 49, 49, (1, 2), topic_id=other, start_timestamp=0),
                  ConfigRecord(4, "", "log.retention.ms", "1"))
    everything = expired_chunks(image, 10**15)
    assert sorted((r.topic_id, r.start_offset) for r in everything) == sorted([
        (ORDERS_ID, 0), (ORDERS_ID, 100), (other, 0)])
    limited = expired_chunks(image, 10**15, limit=1)
    assert len(limited) == 1 and limited[0].start_offset == 0
    after = commit_valid(image, delete_expired_chunks(image, 10**15, limit=2))
    assert len(expired_chunks(after, 10**15)) == 1


def test_nothing_to_delete_writes_nothing() -> None:
    result = delete_expired_chunks(_orders(), 0)
    assert result.records == () and result.response.deleted == 0


def _sized(**by_start: int) -> dict[tuple[uuid.UUID, int, int], int]:
    """Reported sizes of orders-0's chunks, by start offset (``s0=..``, ``s100=..``)."""
    return {(ORDERS_ID, 0, int(name[1:])): size for name, size in by_start.items()}


def test_retention_bytes_deletes_oldest_chunks_while_the_rest_still_reach_the_limit() -> None:
    never = ConfigRecord(2, "orders", "retention.ms", "-1")
    sizes = _sized(s0=1000, s100=1000, s200=500)  # 2500 bytes in the partition
    for limit, gone in [(2501, []), (2500, []), (1500, [0]), (1501, []), (500, [0, 100]),
                        (0, [0, 100])]:
        image = _orders(10 * HOUR_MS, never,
                        ConfigRecord(2, "orders", "retention.bytes", str(limit)))
        # Kafka's rule: a chunk goes while the partition without it is >= the limit.
        assert _starts(expired_chunks(image, 0, sizes=sizes)) == gone, limit
    unlimited = _orders(10 * HOUR_MS, never)
    assert expired_chunks(unlimited, 0, sizes=sizes) == ()  # retention.bytes -1 by default


def test_retention_bytes_counts_unreported_chunks_as_empty_and_reads_the_cluster_default(
        ) -> None:
    image = _orders(10 * HOUR_MS, ConfigRecord(4, "", "log.retention.bytes", "1000"))
    # Nothing reported: nothing is known to exceed the limit.
    assert expired_chunks(image, 0) == ()
    assert expired_chunks(image, 0, sizes={}) == ()
    # Only chunk 100 and the active chunk reported: 0 holds at least 0 bytes, so it goes
    # (the rest is 1500 >= 1000); 100 stays (without it only 500 are known).
    assert _starts(expired_chunks(image, 0, sizes=_sized(s100=1000, s200=500))) == [0]
    topic_key = apply(image, ConfigRecord(2, "orders", "retention.bytes", "-1"))
    assert expired_chunks(topic_key, 0, sizes=_sized(s0=10**9)) == ()


def test_time_and_size_each_delete_a_prefix_and_the_longer_one_goes() -> None:
    image = _orders(10 * HOUR_MS, ConfigRecord(2, "orders", "retention.ms", str(3 * HOUR_MS)),
                    ConfigRecord(2, "orders", "retention.bytes", "600"))
    sizes = _sized(s0=100, s100=1000, s200=500)
    # By size, 0 goes (1500 bytes are left, >= 600) and 100 stays (500 would be left); by
    # time at 4 h + 1, 0 goes. Together: [0].
    assert _starts(expired_chunks(image, 4 * HOUR_MS + 1, sizes=sizes)) == [0]
    # At 13 h + 1 time expires both.
    assert _starts(expired_chunks(image, 13 * HOUR_MS + 1, sizes=sizes)) == [0, 100]
    # A large chunk 0 of a partition past its limit goes before its time.
    assert _starts(expired_chunks(image, 0, sizes=_sized(s0=10**6, s100=600))) == [0]


def test_retention_bytes_never_takes_the_active_chunk_or_an_overlapping_last_chunk() -> None:
    image = with_topic(cluster(range(3)), replicas=((0, 1),), start_offset=200,
                       start_timestamp=HOUR_MS)
    image = apply(image, chunk(0, 99, 99, (0, 1), start_timestamp=0),
                  chunk(100, 199, 209, (0, 1), start_timestamp=HOUR_MS // 2),
                  ConfigRecord(2, "orders", "retention.bytes", "0"),
                  ConfigRecord(2, "orders", "retention.ms", "-1"))
    assert _starts(expired_chunks(image, 0, sizes=_sized(s0=10, s100=10, s200=10))) == [0]
