"""The broker-state rows: from real logs (a partition log and a chunk log ``orders@0``) and the
broker's image, through the local-replicas answer, to the four tables."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from chunkraft.broker_agent.local_replicas import assigned_chunks, local_replicas
from chunkraft.broker_agent.storage import LogConfig, UnifiedLog
from chunkraft.dataplane.record_batch import build_batch
from chunkraft.export.broker_export import broker_state_rows, cluster_id_text
from chunkraft.export.directory import write_export
from chunkraft.export.local_rows import LocalConfigRow, LocalReplicaRow, ProducerIdBlockRow
from chunkraft.export.manifest import ExportKind, Manifest
from chunkraft.export.tables import BROKER_STATE_TABLES, TABLES_BY_NAME, records_to_table
from chunkraft.records.uuids import kafka_uuid_str
from tests.unit.controller.operations.cluster_builders import (
    TOPIC_ID,
    chunk,
    cluster,
    partition,
    with_topic,
)


def records(count: int) -> list[tuple[bytes, bytes, int]]:
    now = int(time.time() * 1000)
    return [(b"k%d" % i, b"v" * 50, now) for i in range(count)]


@pytest.fixture
def answer(tmp_path: Path) -> Any:
    """Broker 0 holds chunk 0..9 in a chunk log and the active chunk (from 50) in the
    partition's log; its image also assigns it chunk 10..49, of which it holds nothing, and
    partition 1, of which it has no log at all."""
    chunk_log = UnifiedLog.open(tmp_path / "orders@0-0", TOPIC_ID, LogConfig())
    main = UnifiedLog.open(tmp_path / "orders-0", TOPIC_ID, LogConfig())
    try:
        chunk_log.append_as_follower(build_batch(records(10), base_offset=0,
                                                 partition_leader_epoch=0))
        main.append_as_follower(build_batch(records(5), base_offset=50,
                                            partition_leader_epoch=1))
        active = partition(0, (0, 1))._replace(start_offset=50)
        image = with_topic(cluster(0, 1), active, partition(1, (0,)),
                           chunk(0, 0, 9, (0, 1)), chunk(0, 10, 49, (0,)))
        logs = {("orders@0", 0): chunk_log, ("orders", 0): main}
        return {"node_id": 0, "metadata_offset": 12, "metadata_epoch": 1,
                "partitions": local_replicas(logs, image),
                "assigned_chunks": assigned_chunks(image, 0),
                "producer_id_blocks": [{"broker_epoch": 3, "block_start": 1000,
                                        "block_end": 2000}],
                "topic_configs": [{"topic": "orders", "name": "retention.ms",
                                   "value": "60000", "source": "DYNAMIC_TOPIC_CONFIG"}]}
    finally:
        chunk_log.close()
        main.close()


def test_the_route_names_chunk_logs_and_lists_only_their_chunk(answer: Any) -> None:
    by_topic = {entry["topic"]: entry for entry in answer["partitions"]}
    chunk_entry = by_topic["orders@0"]
    assert chunk_entry["chunk_log"] == {"topic": "orders", "start_offset": 0}
    assert chunk_entry["directory"] == "orders@0-0"
    assert chunk_entry["topic_id"] == str(TOPIC_ID)
    assert [c["start_offset"] for c in chunk_entry["chunks"]] == [0]
    assert by_topic["orders"]["chunk_log"] is None
    assert [(a["partition"], a["start_offset"], a["active"]) for a in answer["assigned_chunks"]
            ] == [(0, 0, False), (0, 10, False), (0, 50, True), (1, 0, True)]


def test_local_replicas_rows(answer: Any) -> None:
    rows = broker_state_rows(answer)
    replicas = {(r.partition_id, r.chunk_start_offset): r for r in rows["local_replicas"]}
    assert set(replicas) == {(0, 0), (0, 10), (0, 50), (1, 0)}
    held = replicas[(0, 0)]
    assert (held.topic, held.assigned, held.active) == ("orders", True, False)
    assert (held.first_offset_held, held.last_offset_held) == (0, 9) and held.bytes_held > 0
    assert (held.stop_offset, held.end_offset) == (9, 9)
    nothing = replicas[(0, 10)]
    assert (nothing.first_offset_held, nothing.last_offset_held, nothing.bytes_held) == (
        -1, -1, 0)
    active = replicas[(0, 50)]
    assert (active.active, active.first_offset_held, active.last_offset_held) == (True, 50, 54)
    no_log = replicas[(1, 0)]
    assert no_log == LocalReplicaRow(0, "orders", str(TOPIC_ID), 1, 0, True, -1, -1, True,
                                     -1, -1, 0)
    assert rows["producer_id_blocks"] == [ProducerIdBlockRow(0, 3, 1000, 2000)]
    assert {log.directory for log in rows["local_logs"]} == {"orders@0-0", "orders-0"}
    assert {log.topic for log in rows["local_logs"]} == {"orders"}
    assert sorted((s.directory, s.base_offset) for s in rows["local_segments"]) == [
        ("orders-0", 50), ("orders@0-0", 0)]


def test_local_configs_rows_are_the_answers_topic_configs(answer: Any) -> None:
    assert broker_state_rows(answer)["local_configs"] == [
        LocalConfigRow(0, "orders", "retention.ms", "60000", "DYNAMIC_TOPIC_CONFIG")]
    del answer["topic_configs"]  # a broker from before the table: exported empty
    assert broker_state_rows(answer)["local_configs"] == []


def test_data_of_an_unassigned_chunk_is_a_row_not_assigned(answer: Any) -> None:
    answer["assigned_chunks"] = []
    rows = broker_state_rows(answer)
    assert {(r.chunk_start_offset, r.assigned) for r in rows["local_replicas"]} == {
        (0, False), (50, False)}


def test_the_rows_make_a_broker_state_export(answer: Any, tmp_path: Path) -> None:
    rows = broker_state_rows(answer)
    tables = {name: records_to_table(TABLES_BY_NAME[name], v) for name, v in rows.items()}
    manifest = Manifest(ExportKind.BROKER_STATE, "c", 12, 1, 5, 0, "http://b", broker_id=0)
    write_export(tmp_path / "b0", manifest, tables, BROKER_STATE_TABLES)
    read = Manifest.read(tmp_path / "b0")
    assert read.broker_id == 0 and read.tables["local_replicas"].rows == 4
    assert read.tables["local_configs"].rows == 1
    table = pq.read_table(tmp_path / "b0" / "local_replicas")
    assert table.schema == TABLES_BY_NAME["local_replicas"].schema
    configs = pq.read_table(tmp_path / "b0" / "local_configs")
    assert configs.to_pylist() == [{"broker_id": 0, "topic": "orders", "name": "retention.ms",
                                    "value": "60000", "source": "DYNAMIC_TOPIC_CONFIG"}]


def test_cluster_ids_are_written_as_controller_exports_write_them() -> None:
    value = uuid.UUID("6d2a4f0e-0000-4000-8000-00000000c0de")
    assert cluster_id_text(str(value)) == str(value)
    assert cluster_id_text(kafka_uuid_str(value)) == str(value)
    assert cluster_id_text("") == ""
