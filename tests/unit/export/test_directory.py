"""Export directories appear whole or not at all; an existing target is never touched."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from chunkraft.export.directory import (
    ExportDirectory,
    TableWriter,
    remove_partial_exports,
    write_export,
)
from chunkraft.export.manifest import ExportError, ExportKind, Manifest
from chunkraft.export.tables import CONTROLLER_TABLES, TABLES_BY_NAME, records_to_table
from tests.unit.export.samples import by_type, sample_records

TOPICS = TABLES_BY_NAME["topics"]


def manifest() -> Manifest:
    return Manifest(ExportKind.CONTROLLER_SNAPSHOT, "c", 1, 0, 0, 0, "test")


def topics_table() -> pa.Table:
    return records_to_table(TOPICS, by_type(sample_records(), TOPICS.row))


def test_a_committed_export_has_every_table_and_the_manifest(tmp_path: Path) -> None:
    target = write_export(tmp_path / "x", manifest(), {"topics": topics_table()},
                          CONTROLLER_TABLES)
    read = Manifest.read(target)
    assert read.tables["topics"].rows == 2 and read.tables["chunks"].rows == 0
    assert read.exported_at_ms > 0
    for spec in CONTROLLER_TABLES:
        (file,) = read.tables[spec.name].files
        assert pq.read_schema(target / file) == spec.schema
    assert [p.name for p in tmp_path.iterdir()] == ["x"]


def test_an_exception_mid_export_leaves_no_target(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), ExportDirectory(tmp_path / "x") as export:
        export.table(TOPICS).write(topics_table())
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_a_crash_leaves_only_a_hidden_tmp_that_remove_partial_exports_clears(
        tmp_path: Path) -> None:
    export = ExportDirectory(tmp_path / "x")  # never committed nor aborted: a crash
    export.table(TOPICS).write(topics_table())
    assert not (tmp_path / "x").exists()
    (leftover,) = tmp_path.iterdir()
    assert leftover.name.startswith(".x.tmp-")
    (tmp_path / "kept").mkdir()
    assert remove_partial_exports(tmp_path) == [leftover]
    assert [p.name for p in tmp_path.iterdir()] == ["kept"]
    assert remove_partial_exports(tmp_path / "absent") == []


def test_an_existing_target_is_refused_and_kept(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "mine").write_text("keep")
    with pytest.raises(ExportError, match="already exists"):
        write_export(tmp_path / "x", manifest(), {}, CONTROLLER_TABLES)
    assert (tmp_path / "x" / "mine").read_text() == "keep"


def test_parts_written_elsewhere_are_listed_with_their_rows(tmp_path: Path) -> None:
    with ExportDirectory(tmp_path / "x") as export:
        for part in (0, 1):
            (export.work / "topics").mkdir(exist_ok=True)
            writer = TableWriter(TOPICS, export.work / "topics" / f"part-0000{part}.parquet")
            writer.write(topics_table())
            writer.close()
            export.add_part("topics", writer.path, writer.rows)
        with pytest.raises(ExportError, match="not a file inside"):
            export.add_part("topics", tmp_path / "elsewhere.parquet", 1)
        export.commit(manifest(), CONTROLLER_TABLES)
    entry = Manifest.read(tmp_path / "x").tables["topics"]
    assert entry.rows == 4
    assert entry.files == ("topics/part-00000.parquet", "topics/part-00001.parquet")
    assert pq.read_table(tmp_path / "x" / "topics").num_rows == 4


def test_a_table_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    with ExportDirectory(tmp_path / "x") as export, pytest.raises(Exception):  # noqa: B017
        export.table(TABLES_BY_NAME["chunks"]).write(topics_table())
    assert not (tmp_path / "x").exists()
