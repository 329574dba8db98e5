"""Audit test data: a small clean cluster as records, its brokers' disks, and how to write them
as exports; the corruptions, one per rule, are in :mod:`tests.support.audit_corruptions`.

Both engines' tests (Spark and pyarrow) build their exports from here, so they check the same
scenarios against the same expectations.

The clean cluster: brokers 0..3 (racks ``r0``: 0, 1; ``r1``: 2, 3; unfenced), topics
``orders`` (RF 3; created with 2 partitions and expanded to 4, so partitions 2 and 3 carry
KIP-253 PriorPartitionEpochs), ``events`` (RF 2, 2 partitions) and ``audit-log`` (RF 3, one
partition, no inactive chunk). Partitions have 0 to 4 inactive chunks; chunk 100 of orders-0
was cut during a transaction (StopOffset 199, EndOffset 210, the next chunk covers 200..210);
chunk 0 of orders-0 and chunk 2000 of events-0 were moved off the partition's current
replicas; chunk 50 of orders-1 is being moved (adding 1, removing 0). One ProducerIdsRecord
(next id 5000), one ACL. The first chunk of orders-1 has StartTimestamp -1 (unknown).
Configurations (:data:`CONFIGS`): orders' retention.ms, events' max.message.bytes (written with
leading zeros), broker 1's min.insync.replicas and the cluster default log.retention.bytes;
broker 3's own segment.bytes differs from the default (the metadata does not set it, so it is
broker 3's to decide).

A violation is identified by its :data:`Key`: ``(topic_id, partition_id, start_offset,
broker_id)``, each None where the rule leaves the column null. The conventions (both engines):

- chunk rows: the chunk's key, broker None; partition rows: start_offset = the partition's
  StartOffset (its active chunk), broker None;
- chunks.contiguous / overlap / timestamps: the later chunk of the pair (the active chunk,
  as its partition row, for the active-vs-last-inactive timestamp check);
- replicas.leader_in_isr: broker_id = the leader; replicas.registered: one row per (row,
  unknown broker), broker_id = that broker; replicas.fenced_broker and load.skew: broker rows
  (topic, partition and offset None);
- topics.unique / topics.partition_ids: topic rows (topic_id only); producer_ids.grow: one
  row of Nones; producer_ids.blocks_overlap: broker_id = the broker of the offending block;
- drift.*: broker_id = the broker whose disk drifted; missing_replica / extra_replica / gap
  name the chunk (start_offset = the chunk's, or the partition's for the active chunk);
  beyond_end names (topic_id, partition_id, None, broker). Drift looks only at partitions of
  known topics and chunks of known partitions (orphans are topics.orphans' alone);
  drift.config names (topic_id, None, None, broker), one row per differing key.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkraft.audit.inputs import AuditInputs, AuditSettings
from chunkraft.broker_agent.replication_config import ReplicationConfig
from chunkraft.broker_agent.storage import LogConfig
from chunkraft.broker_agent.topic_configs import EffectiveConfigs, local_configs, static_values
from chunkraft.controller.image.configs import ConfigsDelta, ConfigsImage
from chunkraft.export.directory import write_export
from chunkraft.export.local_rows import (
    LocalConfigRow,
    LocalLogRow,
    LocalReplicaRow,
    LocalSegmentRow,
    ProducerIdBlockRow,
)
from chunkraft.export.manifest import ExportKind, Manifest
from chunkraft.export.tables import (
    BROKER_STATE_TABLES,
    CONTROLLER_TABLES,
    TABLES_BY_NAME,
    records_to_table,
)
from chunkraft.records import (
    AccessControlEntryRecord,
    ChunkRecord,
    ConfigRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from chunkraft.records.broker_records import BrokerEndpoint
from chunkraft.records.topic_records import PriorPartitionEpoch

__all__ = [
    "AUDIT_LOG",
    "CLUSTER_ID",
    "CONFIGS",
    "EVENTS",
    "MINUTE_MS",
    "OLD_TABLES",
    "ORDERS",
    "PREVIOUS_TIME_MS",
    "TIME_MS",
    "Key",
    "Scenario",
    "broker_chunk_replicas",
    "chunk_record",
    "clean_broker_states",
    "clean_records",
    "clean_scenario",
    "log_dir_id",
    "partition_record",
    "sorted_keys",
    "violation_key",
    "write_broker_state_export",
    "write_scenario",
    "write_snapshot_export",
]

CLUSTER_ID = "audit-test-cluster"
MINUTE_MS = 60_000
TIME_MS = 1_700_000_000_000
PREVIOUS_TIME_MS = TIME_MS - 5 * MINUTE_MS  # under every default threshold
ORDERS = uuid.UUID("0b6f4d6e-0000-4000-8000-000000000001")
EVENTS = uuid.UUID("0b6f4d6e-0000-4000-8000-000000000002")
AUDIT_LOG = uuid.UUID("0b6f4d6e-0000-4000-8000-000000000003")
NAMES = {ORDERS: "orders", EVENTS: "events", AUDIT_LOG: "audit-log"}
BROKERS = (0, 1, 2, 3)
RACKS = {0: "r0", 1: "r0", 2: "r1", 3: "r1"}
ACTIVE_DATA = 20  # offsets each replica of an active chunk holds in the generated states
CONFIGS = (
    ConfigRecord(2, "orders", "retention.ms", "86400000"),
    ConfigRecord(2, "events", "max.message.bytes", "0002097152"),
    ConfigRecord(4, "1", "min.insync.replicas", "2"),
    ConfigRecord(4, "", "log.retention.bytes", "1073741824"),
)
OWN_LOG_CONFIG = {3: LogConfig(segment_bytes=536_870_912)}
"""Brokers whose own settings differ from the defaults (others: ``LogConfig()``)."""

Key = tuple[str | None, int | None, int | None, int | None]
"""A violation row's identity: (topic_id, partition_id, start_offset, broker_id)."""

Record = Any
StateRows = dict[str, list[Any]]


def violation_key(row: Mapping[str, Any]) -> Key:
    """The :data:`Key` of a violation row (a dict with VIOLATION_COLUMNS keys)."""
    return (row.get("topic_id"), row.get("partition_id"), row.get("start_offset"),
            row.get("broker_id"))


def sorted_keys(keys: Iterable[Key]) -> list[Key]:
    """Keys in a total order (None first), for comparing multisets of rows."""
    return sorted(keys, key=lambda k: tuple((v is not None, v if v is not None else 0)
                                            if not isinstance(v, str) else (True, v)
                                            for v in k))


def log_dir_id(broker: int) -> uuid.UUID:
    """The log directory id of ``broker``'s one log dir in the clean cluster."""
    return uuid.UUID(f"d1000000-0000-4000-8000-{broker:012d}")


def chunk_record(topic: uuid.UUID, partition: int, start: int, stop: int, end: int, ts: int,
                 replicas: Sequence[int], *, isr: Sequence[int] | None = None,
                 adding: Sequence[int] = (), removing: Sequence[int] = ()) -> ChunkRecord:
    """An inactive chunk of the clean cluster (epoch 1, a directory per replica)."""
    return ChunkRecord(
        partition_id=partition, topic_id=topic, start_offset=start, start_timestamp=ts,
        stop_offset=stop, end_offset=end, chunk_epoch=1, replicas=tuple(replicas),
        directories=tuple(log_dir_id(b) for b in replicas),
        isr=tuple(replicas if isr is None else isr), removing_replicas=tuple(removing),
        adding_replicas=tuple(adding), epoch=1)


def partition_record(topic: uuid.UUID, partition: int, replicas: Sequence[int], start: int,
                     ts: int, *, priors: Sequence[tuple[int, int]] = ()) -> PartitionRecord:
    """A partition of the clean cluster (led by its first replica, every replica in sync)."""
    return PartitionRecord(
        partition_id=partition, topic_id=topic, replicas=tuple(replicas), isr=tuple(replicas),
        leader=replicas[0], leader_epoch=3, partition_epoch=7,
        directories=tuple(log_dir_id(b) for b in replicas), start_offset=start, start_timestamp=ts,
        prior_partition_epochs=tuple(PriorPartitionEpoch(p, e) for p, e in priors))


def clean_records() -> list[Record]:
    """The clean cluster (see the module docstring) as controller records."""
    brokers = [RegisterBrokerRecord(
        broker_id=b, incarnation_id=uuid.UUID(int=1000 + b), broker_epoch=100 + b,
        end_points=(BrokerEndpoint("PLAINTEXT", f"broker{b}", 9092 + b, 0),),
        rack=RACKS[b], fenced=False, log_dirs=(log_dir_id(b),)) for b in BROKERS]
    topics = [TopicRecord(name=NAMES[t], topic_id=t) for t in (ORDERS, EVENTS, AUDIT_LOG)]
    partitions = [
        partition_record(ORDERS, 0, [1, 2, 3], 400, 5_000),
        partition_record(ORDERS, 1, [2, 3, 0], 150, 2_500),
        partition_record(ORDERS, 2, [3, 0, 1], 10, 1_200, priors=[(0, 5), (1, 3)]),
        partition_record(ORDERS, 3, [0, 1, 2], 0, -1, priors=[(0, 5), (1, 3)]),
        partition_record(EVENTS, 0, [0, 2], 3_000, 9_000),
        partition_record(EVENTS, 1, [1, 3], 100, 1_100),
        partition_record(AUDIT_LOG, 0, [3, 1, 0], 0, -1),
    ]
    chunks = [
        chunk_record(ORDERS, 0, 0, 99, 99, 1_000, [0, 1, 2]),          # moved off broker 0
        chunk_record(ORDERS, 0, 100, 199, 210, 2_000, [1, 2, 3]),      # cut in a transaction
        chunk_record(ORDERS, 0, 200, 299, 299, 3_000, [1, 2, 3]),
        chunk_record(ORDERS, 0, 300, 399, 399, 4_000, [1, 2, 3]),
        chunk_record(ORDERS, 1, 0, 49, 49, -1, [2, 3, 0]),
        chunk_record(ORDERS, 1, 50, 149, 149, 1_500, [2, 3, 0, 1], isr=[2, 3, 0],
               adding=[1], removing=[0]),                       # a move under way
        chunk_record(ORDERS, 2, 0, 9, 9, 1_100, [3, 0, 1]),
        chunk_record(EVENTS, 0, 0, 999, 999, 6_000, [0, 2]),
        chunk_record(EVENTS, 0, 1_000, 1_999, 1_999, 7_000, [0, 2]),
        chunk_record(EVENTS, 0, 2_000, 2_999, 2_999, 8_000, [1, 3]),   # moved to brokers 1 and 3
        chunk_record(EVENTS, 1, 0, 99, 99, 1_000, [1, 3]),
    ]
    others = [
        ProducerIdsRecord(broker_id=1, broker_epoch=101, next_producer_id=5_000),
        AccessControlEntryRecord(id=uuid.UUID(int=77), resource_type=2, resource_name="orders",
                                 pattern_type=3, principal="User:alice", host="*",
                                 operation=3, permission_type=3),
        *CONFIGS,
    ]
    return [*brokers, *topics, *partitions, *chunks, *others]


def _of(records: Iterable[Record], cls: type) -> list[Any]:
    return [r for r in records if type(r) is cls]


def clean_broker_states(records: Sequence[Record]) -> dict[int, StateRows]:
    """Every registered broker's disk as the records assign it, rows by table name.

    A broker holds every inactive chunk it is a replica of and not being added to, in full,
    and ``ACTIVE_DATA`` offsets of the active chunk of every partition it is a replica of
    (not being added); one log per (topic, partition), whose segments are the held ranges
    without overlap. It applies to the topics of those what a broker following the records'
    ConfigRecords with its own settings (:data:`OWN_LOG_CONFIG`) applies. Producer id
    blocks: broker ``b`` hands out ``[1000 b, 1000 (b + 1))``. Partitions of unknown topics
    and chunks of unknown partitions are skipped.
    """
    names = {t.topic_id: t.name for t in _of(records, TopicRecord)}
    partitions = {(p.topic_id, p.partition_id): p for p in _of(records, PartitionRecord)
                  if p.topic_id in names}
    chunks: dict[tuple[uuid.UUID, int], list[ChunkRecord]] = {}
    for c in _of(records, ChunkRecord):
        if (c.topic_id, c.partition_id) in partitions:
            chunks.setdefault((c.topic_id, c.partition_id), []).append(c)
    delta = ConfigsDelta(ConfigsImage.EMPTY)
    for record in _of(records, ConfigRecord):
        delta.replay(record)
    configs = delta.apply()
    states: dict[int, StateRows] = {}
    for reg in _of(records, RegisterBrokerRecord):
        b = reg.broker_id
        rows: StateRows = {t.name: [] for t in BROKER_STATE_TABLES}
        for (topic, pid), p in sorted(partitions.items(), key=lambda kv: (str(kv[0][0]),
                                                                          kv[0][1])):
            name = names[topic]
            held: list[tuple[int, int]] = []
            for c in sorted(chunks.get((topic, pid), []), key=lambda c: c.start_offset):
                if b not in c.replicas:
                    continue
                holds = b not in c.adding_replicas
                if holds:
                    held.append((c.start_offset, c.end_offset))
                rows["local_replicas"].append(LocalReplicaRow(
                    broker_id=b, topic=name, topic_id=str(topic), partition_id=pid,
                    chunk_start_offset=c.start_offset, active=False, stop_offset=c.stop_offset,
                    end_offset=c.end_offset, assigned=True,
                    first_offset_held=c.start_offset if holds else -1,
                    last_offset_held=c.end_offset if holds else -1,
                    bytes_held=(c.end_offset - c.start_offset + 1) * 100 if holds else 0))
            active = b in p.replicas and b not in p.adding_replicas
            if active:
                held.append((p.start_offset, p.start_offset + ACTIVE_DATA - 1))
                rows["local_replicas"].append(LocalReplicaRow(
                    broker_id=b, topic=name, topic_id=str(topic), partition_id=pid,
                    chunk_start_offset=p.start_offset, active=True, assigned=True,
                    first_offset_held=p.start_offset,
                    last_offset_held=p.start_offset + ACTIVE_DATA - 1,
                    bytes_held=ACTIVE_DATA * 100))
            if not held:
                continue
            directory = f"{name}-{pid}"
            cursor = -1
            segments: list[LocalSegmentRow] = []
            for start, end in held:
                base = max(start, cursor)
                if base <= end:
                    segments.append(LocalSegmentRow(
                        broker_id=b, topic=name, partition_id=pid, directory=directory,
                        base_offset=base, next_offset=end + 1,
                        size_bytes=(end + 1 - base) * 100, max_timestamp=-1))
                    cursor = end + 1
            rows["local_segments"].extend(segments)
            end_offset = max(end for _, end in held) + 1
            rows["local_logs"].append(LocalLogRow(
                broker_id=b, topic=name, topic_id=str(topic), partition_id=pid,
                directory=directory, log_start_offset=segments[0].base_offset,
                log_end_offset=end_offset, high_watermark=end_offset,
                last_stable_offset=end_offset,
                size_bytes=sum(s.size_bytes for s in segments)))
        rows["producer_id_blocks"].append(ProducerIdBlockRow(
            broker_id=b, broker_epoch=reg.broker_epoch, block_start=1_000 * b,
            block_end=1_000 * (b + 1)))
        log = OWN_LOG_CONFIG.get(b, LogConfig())
        effective = EffectiveConfigs(b, log, static_values(log, ReplicationConfig()))
        effective.refresh(configs)
        rows["local_configs"] = [
            LocalConfigRow(b, c["topic"], c["name"], c["value"], c["source"])
            for c in local_configs(effective, {r.topic for r in rows["local_replicas"]})]
        states[b] = rows
    return states


def broker_chunk_replicas(records: Sequence[Record]) -> dict[int, int]:
    """load.skew's measure: per registered broker, inactive chunk replicas + partition
    replicas (entries of the replicas lists)."""
    counts = Counter({r.broker_id: 0 for r in _of(records, RegisterBrokerRecord)})
    for row in [*_of(records, ChunkRecord), *_of(records, PartitionRecord)]:
        for b in row.replicas:
            if b in counts:
                counts[b] += 1
    return dict(counts)


# --- writing exports ----------------------------------------------------------------------

_SPEC_OF_ROW = {spec.row: spec for spec in CONTROLLER_TABLES + BROKER_STATE_TABLES}


def write_snapshot_export(path: Path, records: Iterable[Record], *, offset: int, epoch: int = 1,
                          time_ms: int, cluster_id: str = CLUSTER_ID,
                          omit: tuple[str, ...] = ()) -> Path:
    """Writes ``records`` as a controller-snapshot export at ``path`` (which must not exist),
    without the tables named in ``omit`` (as an export from before they existed)."""
    grouped: dict[str, list[Any]] = {}
    for record in records:
        grouped.setdefault(_SPEC_OF_ROW[type(record)].name, []).append(record)
    tables = {name: records_to_table(TABLES_BY_NAME[name], rows)
              for name, rows in grouped.items()}
    manifest = Manifest(ExportKind.CONTROLLER_SNAPSHOT, cluster_id, offset, epoch, time_ms, 0,
                        "tests.support.audit_snapshots")
    specs = tuple(spec for spec in CONTROLLER_TABLES if spec.name not in omit)
    return write_export(path, manifest, {n: t for n, t in tables.items() if n not in omit},
                        specs)


def write_broker_state_export(path: Path, broker_id: int, rows_by_table: Mapping[str, list[Any]],
                              *, offset: int, time_ms: int,
                              cluster_id: str = CLUSTER_ID, omit: tuple[str, ...] = ()
                              ) -> Path:
    """Writes one broker's rows (by table name) as a broker-state export at ``path``, without
    the tables named in ``omit``."""
    tables = {name: records_to_table(TABLES_BY_NAME[name], rows)
              for name, rows in rows_by_table.items() if rows and name not in omit}
    manifest = Manifest(ExportKind.BROKER_STATE, cluster_id, offset, 1, time_ms, 0,
                        "tests.support.audit_snapshots", broker_id=broker_id)
    specs = tuple(spec for spec in BROKER_STATE_TABLES if spec.name not in omit)
    return write_export(path, manifest, tables, specs)


# --- scenarios ------------------------------------------------------------------------------

@dataclass
class Scenario:
    """A snapshot (optionally a previous one and brokers' states) and what an audit must find.

    ``expected`` holds the exact offending rows of ``rule_id`` as :data:`Key` values (a
    multiset); every other rule must report nothing. ``broker_states`` maps a broker id to its
    rows by table name (None: no state exports). ``settings`` are the audit's settings.
    """

    rule_id: str
    records: list[Record]
    expected: list[Key]
    time_ms: int = TIME_MS
    previous: list[Record] | None = None
    previous_time_ms: int = PREVIOUS_TIME_MS
    broker_states: dict[int, StateRows] | None = None
    settings: AuditSettings = field(default_factory=AuditSettings)


OLD_TABLES = ("configs", "controllers", "local_configs")
"""Tables that exports written before configurations were metadata lack
(``write_scenario(..., old=True)``)."""


def write_scenario(scenario: Scenario, directory: Path, *, old: bool = False) -> AuditInputs:
    """Writes the scenario's exports under ``directory`` (``snapshot``, ``previous``,
    ``broker-<id>``) and returns them loaded as audit inputs; ``old``: without
    :data:`OLD_TABLES`, as exports from before those tables."""
    omit = OLD_TABLES if old else ()
    snapshot = write_snapshot_export(directory / "snapshot", scenario.records, offset=1_000,
                                     time_ms=scenario.time_ms, omit=omit)
    previous = None
    if scenario.previous is not None:
        previous = write_snapshot_export(directory / "previous", scenario.previous, offset=900,
                                         time_ms=scenario.previous_time_ms, omit=omit)
    states = tuple(
        write_broker_state_export(directory / f"broker-{b}", b, rows, offset=1_000,
                                  time_ms=scenario.time_ms, omit=omit)
        for b, rows in sorted((scenario.broker_states or {}).items()))
    return AuditInputs.load(snapshot, previous, states)


def clean_scenario() -> Scenario:
    """The clean cluster with every input (a previous snapshot 5 min earlier, every broker's
    state): no rule fires."""
    records = clean_records()
    return Scenario("", records, [], previous=clean_records(),
                    broker_states=clean_broker_states(records))
