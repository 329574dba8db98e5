"""export_snapshot: checkpoint files and Raft dumps to tables equal to the image, the manifest
from the batches, and no output at all for a torn, corrupt or unknown source."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from chunkraft.controller.raft.dump import write_dump
from chunkraft.export.manifest import ExportError, ExportKind, Manifest
from chunkraft.export.snapshot_export import export_snapshot
from chunkraft.export.tables import CONTROLLER_TABLES, table_to_records
from chunkraft.records import ChunkRecord, encode_record
from chunkraft.records.files import read_batches, write_snapshot
from chunkraft.records.uuids import kafka_uuid_str
from tests.unit.export.samples import (
    APPEND_TIME_MS,
    CLUSTER_ID,
    TOPIC_A,
    sample_image,
    sample_records,
    write_sample_snapshot,
)


def exported_records(out: Path) -> dict[str, list[object]]:
    manifest = Manifest.read(out)
    tables: dict[str, list[object]] = {}
    for spec in CONTROLLER_TABLES:
        rows: list[object] = []
        for file in manifest.tables[spec.name].files:
            rows.extend(table_to_records(spec, pq.read_table(out / file)))
        assert len(rows) == manifest.tables[spec.name].rows
        tables[spec.name] = sorted(rows, key=repr)
    return tables


def image_tables(records: list[object] | None = None) -> dict[str, list[object]]:
    image = sample_image(records)
    return {spec.name: sorted((r for r in image.to_records() if type(r) is spec.row), key=repr)
            for spec in CONTROLLER_TABLES}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_checkpoint_exports_the_image(tmp_path: Path, workers: int) -> None:
    path = write_sample_snapshot(tmp_path, end_offset=42, epoch=2)
    manifest = export_snapshot(path, tmp_path / "out", workers=workers, row_group_rows=2)
    assert (manifest.kind, manifest.offset, manifest.epoch) == (
        ExportKind.CONTROLLER_SNAPSHOT, 41, 2)
    assert manifest.cluster_id == kafka_uuid_str(CLUSTER_ID)
    assert manifest.snapshot_time_ms == APPEND_TIME_MS
    assert manifest.source == str(path) and manifest.broker_id is None
    assert exported_records(tmp_path / "out") == image_tables()
    if workers == 2:
        assert len(manifest.tables["chunks"].files) == 2


def test_a_raft_dump_exports_its_image(tmp_path: Path) -> None:
    image = sample_image(offset=77, epoch=4)
    dump = tmp_path / "dump"
    write_dump(dump, image=image, cluster_id=CLUSTER_ID, keys=[], last_entry=(b"", 9, 4),
               previous_entry=(b"", 8, 4), members=["127.0.0.1:1"])
    manifest = export_snapshot(dump, tmp_path / "out")
    assert (manifest.offset, manifest.epoch) == (77, 4)
    assert manifest.cluster_id == kafka_uuid_str(CLUSTER_ID)
    assert manifest.snapshot_time_ms > 0
    assert exported_records(tmp_path / "out") == image_tables()


def test_a_zero_append_time_falls_back_to_the_file_time(tmp_path: Path) -> None:
    path = write_sample_snapshot(tmp_path, append_time_ms=0)
    os.utime(path, (1_700_000_000, 1_700_000_000))
    manifest = export_snapshot(path, tmp_path / "out")
    assert manifest.snapshot_time_ms == 1_700_000_000_000


def test_many_row_groups(tmp_path: Path) -> None:
    chunks = [ChunkRecord(partition_id=0, topic_id=TOPIC_A, start_offset=1000 + 10 * i,
                          stop_offset=1009 + 10 * i, end_offset=1009 + 10 * i,
                          start_timestamp=i, chunk_epoch=0, epoch=0, replicas=(1,), isr=(1,))
              for i in range(25)]
    records = sample_records()[:5] + chunks + sample_records()[5:]
    path = write_sample_snapshot(tmp_path, records, records_per_batch=4)
    export_snapshot(path, tmp_path / "out", row_group_rows=4)
    assert pq.ParquetFile(tmp_path / "out" / "chunks" / "part-00000.parquet"
                          ).num_row_groups > 2
    assert exported_records(tmp_path / "out") == image_tables(records)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_torn_snapshot_leaves_no_output(tmp_path: Path, workers: int) -> None:
    path = write_sample_snapshot(tmp_path)
    with open(path, "r+b") as file:
        file.truncate(path.stat().st_size - 7)
    with pytest.raises(ExportError, match="incomplete snapshot"):
        export_snapshot(path, tmp_path / "out", workers=workers)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_corrupt_batch_leaves_no_output(tmp_path: Path) -> None:
    path = write_sample_snapshot(tmp_path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ExportError, match="cannot export"):
        export_snapshot(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_snapshot_without_end_marker_is_refused(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, end_offset=5, epoch=1, cluster_id=uuid.uuid4(),
                          records=map(encode_record, sample_records()), records_per_batch=3)
    head = path.read_bytes()
    # keep the first batch alone: complete batches, but no end marker
    first = next(read_batches(path))
    path.write_bytes(head[:first.end_position])
    with pytest.raises(ExportError, match="no end-of-snapshot marker"):
        export_snapshot(path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_unknown_and_missing_sources_and_existing_targets(tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    with pytest.raises(ExportError, match="not a snapshot name"):
        export_snapshot(other, tmp_path / "out")
    with pytest.raises(ExportError, match="cannot read"):
        export_snapshot(tmp_path / "absent.checkpoint", tmp_path / "out")
    path = write_sample_snapshot(tmp_path)
    (tmp_path / "out").mkdir()
    with pytest.raises(ExportError, match="already exists"):
        export_snapshot(path, tmp_path / "out")
    bad_dump = tmp_path / "dump"
    bad_dump.write_bytes(b"CRDUMP01" + b"\0" * 4)
    with pytest.raises(ExportError, match="Raft dump"):
        export_snapshot(bad_dump, tmp_path / "out2")
    assert not (tmp_path / "out2").exists()
