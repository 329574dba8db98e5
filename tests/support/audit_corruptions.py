"""One corruption per rule of :mod:`chunkraft.audit.catalog`: the clean cluster of
:mod:`tests.support.audit_snapshots` broken in exactly that rule's way, with the exact rows the
rule must report (:data:`CORRUPTIONS`). The conventions of a violation's key are in that
module's docstring.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from chunkraft.audit.catalog import RULES
from chunkraft.audit.inputs import AuditSettings
from chunkraft.export.local_rows import (
    LocalConfigRow,
    LocalReplicaRow,
    LocalSegmentRow,
    ProducerIdBlockRow,
)
from chunkraft.records import (
    ChunkRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from chunkraft.records.topic_records import PriorPartitionEpoch
from tests.support.audit_snapshots import (
    AUDIT_LOG,
    EVENTS,
    MINUTE_MS,
    ORDERS,
    TIME_MS,
    Key,
    Record,
    Scenario,
    broker_chunk_replicas,
    chunk_record,
    clean_broker_states,
    clean_records,
    log_dir_id,
    partition_record,
)

__all__ = ["CORRUPTIONS"]


def _replace(records: list[Record], match: Callable[[Any], bool], **changes: Any) -> list[Record]:
    hits = [r for r in records if match(r)]
    assert len(hits) == 1, f"expected one record to change, found {len(hits)}"
    return [r._replace(**changes) if match(r) else r for r in records]


def _is_chunk(topic: uuid.UUID, partition: int, start: int) -> Callable[[Any], bool]:
    return lambda r: (type(r) is ChunkRecord and r.topic_id == topic
                      and r.partition_id == partition and r.start_offset == start)


def _is_partition(topic: uuid.UUID, partition: int) -> Callable[[Any], bool]:
    return lambda r: (type(r) is PartitionRecord and r.topic_id == topic
                      and r.partition_id == partition)


def _corrupt(rule_id: str, records: list[Record], expected: list[Key], *,
             states_from: list[Record] | None = None, **fields: Any) -> Scenario:
    """A scenario with all inputs whose states follow ``states_from`` (default: ``records``)."""
    states = clean_broker_states(records if states_from is None else states_from)
    fields.setdefault("previous", clean_records())
    return Scenario(rule_id, records, expected, broker_states=states, **fields)


def _o(partition: int, start: int | None, broker: int | None = None) -> Key:
    return (str(ORDERS), partition, start, broker)


def _e(partition: int, start: int | None, broker: int | None = None) -> Key:
    return (str(EVENTS), partition, start, broker)


def _offsets_ordered() -> Scenario:
    # EndOffset below StopOffset on a chunk all of whose replicas are the partition's.
    records = _replace(clean_records(), _is_chunk(ORDERS, 0, 200), end_offset=290)
    return _corrupt("chunks.offsets_ordered", records, [_o(0, 200)],
                    states_from=clean_records())


def _chunk_epoch() -> Scenario:
    # Epoch moved on without ChunkEpoch on one chunk.
    records = _replace(clean_records(), _is_chunk(ORDERS, 0, 200), epoch=2)
    return _corrupt("chunks.epoch", records, [_o(0, 200)])


def _contiguous() -> Scenario:
    # Chunk 0 of events-0 stops at 995 (EndOffset unchanged): 996..999 readable from no chunk.
    records = _replace(clean_records(), _is_chunk(EVENTS, 0, 0), stop_offset=995)
    return _corrupt("chunks.contiguous", records, [_e(0, 1_000)])


def _overlap() -> Scenario:
    # The transaction-cut chunk now ends past the next chunk's end.
    records = _replace(clean_records(), _is_chunk(ORDERS, 0, 100), end_offset=305)
    return _corrupt("chunks.overlap", records, [_o(0, 200)])


def _active_start() -> Scenario:
    records = _replace(clean_records(), _is_partition(ORDERS, 0), start_offset=410)
    return _corrupt("chunks.active_start", records, [_o(0, 410)])


def _timestamps() -> Scenario:
    # Chunk 1000 of events-0 starts earlier than chunk 0; and the active chunk of events-1
    # starts earlier than its last inactive chunk.
    records = _replace(clean_records(), _is_chunk(EVENTS, 0, 1_000), start_timestamp=5_000)
    records = _replace(records, _is_partition(EVENTS, 1), start_timestamp=900)
    return _corrupt("chunks.timestamps", records, [_e(0, 1_000), _e(1, 100)])


def _distinct() -> Scenario:
    records = _replace(clean_records(), _is_chunk(ORDERS, 0, 300), replicas=(1, 1, 3),
                       isr=(1, 3), directories=(log_dir_id(1), log_dir_id(1), log_dir_id(3)))
    return _corrupt("replicas.distinct", records, [_o(0, 300)])


def _count() -> Scenario:
    # A chunk of orders (RF 3) with 2 replicas, and a partition of events (RF 2) with 3.
    records = _replace(clean_records(), _is_chunk(ORDERS, 0, 300), replicas=(1, 2), isr=(1, 2),
                       directories=(log_dir_id(1), log_dir_id(2)))
    records = _replace(records, _is_partition(EVENTS, 0), replicas=(0, 2, 3), isr=(0, 2, 3),
                       directories=(log_dir_id(0), log_dir_id(2), log_dir_id(3)))
    # events now has one partition of RF 3 and one of RF 2: the tie goes to 3, so events-1
    # fires, and so do events-0's chunks (RF 2 against their partition's 3).
    return _corrupt("replicas.count", records,
                    [_o(0, 300), _e(1, 100), _e(0, 0), _e(0, 1_000), _e(0, 2_000)])


def _isr_subset() -> Scenario:
    records = _replace(clean_records(), _is_chunk(ORDERS, 0, 200), isr=())
    return _corrupt("replicas.isr_subset", records, [_o(0, 200)])


def _lists() -> Scenario:
    # events-0 adds broker 3, not one of its replicas [0, 2]; chunk 300 of orders-0 lists
    # broker 1 twice in its ISR.
    records = _replace(clean_records(), _is_partition(EVENTS, 0), adding_replicas=(3,))
    records = _replace(records, _is_chunk(ORDERS, 0, 300), isr=(1, 1, 3))
    return _corrupt("replicas.lists", records, [_e(0, 3_000), _o(0, 300)],
                    states_from=clean_records())


def _leader_in_isr() -> Scenario:
    records = _replace(clean_records(), _is_partition(ORDERS, 2), isr=(0, 1))
    return _corrupt("replicas.leader_in_isr", records, [_o(2, 10, 3)])


def _no_leader() -> Scenario:
    records = _replace(clean_records(), _is_partition(EVENTS, 1), leader=-1)
    return _corrupt("replicas.no_leader", records, [_e(1, 100)])


def _registered() -> Scenario:
    # Broker 7 never registered: a replica of a chunk, and the leader (and ISR) of a partition.
    records = _replace(clean_records(), _is_chunk(ORDERS, 0, 300), replicas=(1, 2, 7),
                       isr=(1, 2), directories=(log_dir_id(1), log_dir_id(2), log_dir_id(7)))
    records = _replace(records, _is_partition(AUDIT_LOG, 0), replicas=(7, 1, 0),
                       isr=(7, 1, 0), leader=7,
                       directories=(log_dir_id(7), log_dir_id(1), log_dir_id(0)))
    return _corrupt("replicas.registered", records,
                    [_o(0, 300, 7), (str(AUDIT_LOG), 0, 0, 7)])


def _fenced(records: list[Record], broker: int) -> list[Record]:
    return _replace(records, lambda r: type(r) is RegisterBrokerRecord
                    and r.broker_id == broker, fenced=True)


def _fenced_broker() -> Scenario:
    # Broker 3 fenced 15 min apart with the same epoch (fires); broker 2 fenced now only.
    records = _fenced(_fenced(clean_records(), 3), 2)
    return _corrupt("replicas.fenced_broker", records, [(None, None, None, 3)],
                    previous=_fenced(clean_records(), 3),
                    previous_time_ms=TIME_MS - 15 * MINUTE_MS)


def _stuck_move() -> Scenario:
    # The move of chunk 50 of orders-1 is in both snapshots, 45 min apart (threshold 30 min).
    return _corrupt("replicas.stuck_move", clean_records(), [_o(1, 50)],
                    previous_time_ms=TIME_MS - 45 * MINUTE_MS)


def _unique() -> Scenario:
    # A second topic row with orders' id.
    records = [*clean_records(), TopicRecord(name="orders-old", topic_id=ORDERS)]
    return _corrupt("topics.unique", records, [(str(ORDERS), None, None, None)] * 2,
                    states_from=clean_records())


def _partition_ids() -> Scenario:
    # audit-log's only partition is numbered 1.
    records = _replace(clean_records(), _is_partition(AUDIT_LOG, 0), partition_id=1)
    return _corrupt("topics.partition_ids", records, [(str(AUDIT_LOG), None, None, None)])


def _prior_partition_epochs() -> Scenario:
    # orders-3 lists prior partition 0 twice; orders-2 gives partition 1 a leader epoch -1.
    twice = (PriorPartitionEpoch(0, 5), PriorPartitionEpoch(0, 5))
    negative = (PriorPartitionEpoch(0, 5), PriorPartitionEpoch(1, -1))
    records = _replace(clean_records(), _is_partition(ORDERS, 3), prior_partition_epochs=twice)
    records = _replace(records, _is_partition(ORDERS, 2), prior_partition_epochs=negative)
    return _corrupt("topics.prior_partition_epochs", records, [_o(3, 0), _o(2, 10)])


def _orphans() -> Scenario:
    gone = uuid.UUID("0b6f4d6e-0000-4000-8000-0000000000ff")
    records = [*clean_records(), partition_record(gone, 0, [0, 1, 2], 50, 100),
               chunk_record(EVENTS, 5, 0, 9, 9, 100, [0, 2])]
    return _corrupt("topics.orphans", records, [(str(gone), 0, 50, None), _e(5, 0)])


def _blocks_overlap() -> Scenario:
    scenario = _corrupt("producer_ids.blocks_overlap", clean_records(),
                        [(None, None, None, 2), (None, None, None, 3)])
    assert scenario.broker_states is not None
    # Broker 2's block starts inside broker 1's; broker 3's reaches past the next id 5000.
    scenario.broker_states[2]["producer_id_blocks"] = [
        ProducerIdBlockRow(broker_id=2, broker_epoch=102, block_start=1_500, block_end=2_500)]
    scenario.broker_states[3]["producer_id_blocks"] = [
        ProducerIdBlockRow(broker_id=3, broker_epoch=103, block_start=4_500, block_end=5_500)]
    return scenario


def _grow() -> Scenario:
    previous = _replace(clean_records(), lambda r: type(r) is ProducerIdsRecord,
                        next_producer_id=9_000)
    return _corrupt("producer_ids.grow", clean_records(), [(None, None, None, None)],
                    previous=previous)


def _state_replace(rows: list[Any], match: Callable[[Any], bool], **changes: Any) -> list[Any]:
    hits = [r for r in rows if match(r)]
    assert len(hits) == 1, f"expected one row to change, found {len(hits)}"
    return [r._replace(**changes) if match(r) else r for r in rows]


def _missing_replica() -> Scenario:
    # Broker 2 holds nothing of chunk 100 of orders-0; broker 0 lost its log of events-0
    # (segments gone too), so its active chunk and its two chunks there are missing.
    scenario = _corrupt("drift.missing_replica", clean_records(),
                        [_o(0, 100, 2), _e(0, 3_000, 0), _e(0, 0, 0), _e(0, 1_000, 0)])
    assert scenario.broker_states is not None
    b2 = scenario.broker_states[2]
    b2["local_replicas"] = _state_replace(
        b2["local_replicas"], lambda r: r.topic == "orders" and r.partition_id == 0
        and r.chunk_start_offset == 100, first_offset_held=-1, last_offset_held=-1, bytes_held=0)
    b0 = scenario.broker_states[0]
    for table in ("local_replicas", "local_segments", "local_logs"):
        b0[table] = [r for r in b0[table] if not (r.topic == "events" and r.partition_id == 0)]
    return scenario


def _extra_replica() -> Scenario:
    # Broker 3 (a replica of orders-0's active chunk) still holds chunk 0 of orders-0.
    scenario = _corrupt("drift.extra_replica", clean_records(), [_o(0, 0, 3)])
    assert scenario.broker_states is not None
    scenario.broker_states[3]["local_replicas"].append(LocalReplicaRow(
        broker_id=3, topic="orders", topic_id=str(ORDERS), partition_id=0,
        chunk_start_offset=0, active=False, stop_offset=99, end_offset=99, assigned=False,
        first_offset_held=0, last_offset_held=99, bytes_held=10_000))
    return scenario


def _beyond_end() -> Scenario:
    # Broker 0 (no longer a replica of orders-0, assigned its chunk 0 up to 99) holds up to 149.
    scenario = _corrupt("drift.beyond_end", clean_records(), [_o(0, None, 0)])
    assert scenario.broker_states is not None
    b0 = scenario.broker_states[0]
    b0["local_logs"] = _state_replace(
        b0["local_logs"], lambda r: r.topic == "orders" and r.partition_id == 0,
        log_end_offset=150, high_watermark=150, last_stable_offset=150)
    return scenario


def _gap() -> Scenario:
    # Broker 2 holds chunk 200 of orders-0 only up to 289; broker 3's segments of orders-0
    # miss 250..259, inside chunk 200.
    scenario = _corrupt("drift.gap", clean_records(), [_o(0, 200, 2), _o(0, 200, 3)])
    assert scenario.broker_states is not None
    b2 = scenario.broker_states[2]
    b2["local_replicas"] = _state_replace(
        b2["local_replicas"], lambda r: r.topic == "orders" and r.partition_id == 0
        and r.chunk_start_offset == 200, last_offset_held=289)
    b3 = scenario.broker_states[3]
    segments: list[LocalSegmentRow] = []
    for s in b3["local_segments"]:
        if s.topic == "orders" and s.partition_id == 0 and s.base_offset <= 250 < s.next_offset:
            segments.append(s._replace(next_offset=250, size_bytes=(250 - s.base_offset) * 100))
            segments.append(s._replace(base_offset=260,
                                       size_bytes=(s.next_offset - 260) * 100))
        else:
            segments.append(s)
    b3["local_segments"] = segments
    return scenario


def _config() -> Scenario:
    # Broker 2 ignores orders' retention.ms; broker 1 applies its own min.insync.replicas to
    # events instead of its dynamic one. Broker 0 applies other values to a topic the snapshot
    # does not have (not judged).
    scenario = _corrupt("drift.config", clean_records(),
                        [(str(ORDERS), None, None, 2), (str(EVENTS), None, None, 1)])
    assert scenario.broker_states is not None
    b2 = scenario.broker_states[2]
    b2["local_configs"] = _state_replace(
        b2["local_configs"], lambda r: r.topic == "orders" and r.name == "retention.ms",
        value="604800000", source="STATIC_BROKER_CONFIG")
    b1 = scenario.broker_states[1]
    b1["local_configs"] = _state_replace(
        b1["local_configs"], lambda r: r.topic == "events" and r.name == "min.insync.replicas",
        value="1", source="STATIC_BROKER_CONFIG")
    scenario.broker_states[0]["local_configs"] += [
        LocalConfigRow(0, "gone", "retention.ms", "1", "DYNAMIC_TOPIC_CONFIG"),
        LocalConfigRow(0, "gone", "retention.bytes", "5", "STATIC_BROKER_CONFIG")]
    return scenario


def _skew() -> Scenario:
    records = clean_records()
    counts = broker_chunk_replicas(records)
    mean = sum(counts.values()) / len(counts)
    top = max(counts.values())
    second = max((c for c in counts.values() if c != top), default=0)
    max_skew = (top + max(second, mean)) / 2 / mean  # between the top broker and the others
    settings = AuditSettings(min_mean_for_skew=1.0, max_skew=max_skew)
    expected: list[Key] = [(None, None, None, b) for b, c in counts.items()
                           if c > max_skew * mean]
    assert expected, "the clean cluster needs a busiest broker"
    return _corrupt("load.skew", records, expected, settings=settings)


CORRUPTIONS: dict[str, Callable[[], Scenario]] = {
    "chunks.offsets_ordered": _offsets_ordered,
    "chunks.epoch": _chunk_epoch,
    "chunks.contiguous": _contiguous,
    "chunks.overlap": _overlap,
    "chunks.active_start": _active_start,
    "chunks.timestamps": _timestamps,
    "replicas.distinct": _distinct,
    "replicas.count": _count,
    "replicas.isr_subset": _isr_subset,
    "replicas.lists": _lists,
    "replicas.leader_in_isr": _leader_in_isr,
    "replicas.no_leader": _no_leader,
    "replicas.registered": _registered,
    "replicas.fenced_broker": _fenced_broker,
    "replicas.stuck_move": _stuck_move,
    "topics.unique": _unique,
    "topics.partition_ids": _partition_ids,
    "topics.prior_partition_epochs": _prior_partition_epochs,
    "topics.orphans": _orphans,
    "producer_ids.blocks_overlap": _blocks_overlap,
    "producer_ids.grow": _grow,
    "drift.missing_replica": _missing_replica,
    "drift.extra_replica": _extra_replica,
    "drift.beyond_end": _beyond_end,
    "drift.gap": _gap,
    "drift.config": _config,
    "load.skew": _skew,
}
"""One scenario per catalog rule id: the clean cluster broken in exactly that rule's way."""

assert set(CORRUPTIONS) == {rule.id for rule in RULES}, "a rule without a corruption"
