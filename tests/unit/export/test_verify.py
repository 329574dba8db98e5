"""Verifying an export against its manifest: every listed file's presence, size, SHA-256,
Parquet footer, rows and columns; unlisted files are notices, not errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from chunkraft.export.directory import write_export
from chunkraft.export.manifest import MANIFEST_NAME, ExportKind, Manifest
from chunkraft.export.tables import CONTROLLER_TABLES, TABLES_BY_NAME, records_to_table
from chunkraft.export.verify import ExportIntegrityError, verify_export
from tests.unit.export.samples import by_type, sample_records

TOPICS = TABLES_BY_NAME["topics"]


@pytest.fixture
def export(tmp_path: Path) -> Path:
    topics = records_to_table(TOPICS, by_type(sample_records(), TOPICS.row))
    return write_export(tmp_path / "x", Manifest(ExportKind.CONTROLLER_SNAPSHOT, "c", 1, 0, 0,
                                                 0, "test"), {"topics": topics},
                        CONTROLLER_TABLES)


def test_a_fresh_export_verifies_with_its_row_counts(export: Path) -> None:
    manifest = Manifest.read(export)
    entry = manifest.tables["topics"]
    (check,) = entry.checks
    assert check.size == (export / check.path).stat().st_size and check.rows == 2
    assert len(check.sha256 or "") == 64
    verified = verify_export(export, manifest)
    assert verified.rows["topics"] == 2 and verified.rows["chunks"] == 0
    assert verified.checksummed and verified.notices == ()


def test_a_missing_listed_file_is_named(export: Path) -> None:
    (export / "topics" / "part-00000.parquet").unlink()
    with pytest.raises(ExportIntegrityError,
                       match=r"topics/part-00000.parquet: listed in the manifest but missing"):
        verify_export(export, Manifest.read(export))


def test_a_flipped_byte_is_a_checksum_mismatch(export: Path) -> None:
    path = export / "topics" / "part-00000.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ExportIntegrityError, match=r"part-00000.parquet: SHA-256 differs: "):
        verify_export(export, Manifest.read(export))
    # without the checksum comparison the footer still reads: the damage goes unnoticed
    verify_export(export, Manifest.read(export), checksums=False)


def test_a_replaced_file_with_fewer_rows_is_named_by_size_or_rows(export: Path) -> None:
    path = export / "topics" / "part-00000.parquet"
    table = pq.read_table(path)
    pq.write_table(table.slice(0, 1), path, compression="zstd")
    with pytest.raises(ExportIntegrityError, match=r"part-00000.parquet: size differs: "):
        verify_export(export, Manifest.read(export))
    # a manifest that records no sizes (version 1) still catches the rows
    value = json.loads((export / MANIFEST_NAME).read_text())
    value["schema_version"] = 1
    for table_value in value["tables"].values():
        table_value["files"] = [f["path"] for f in table_value["files"]]
    (export / MANIFEST_NAME).write_text(json.dumps(value))
    with pytest.raises(ExportIntegrityError, match=r"topics: row count differs: the listed "
                                                   r"files hold 1 rows, the manifest records 2"):
        verify_export(export, Manifest.read(export))


def test_a_file_that_is_not_parquet_is_named(export: Path) -> None:
    value = json.loads((export / MANIFEST_NAME).read_text())
    value["schema_version"] = 1
    for table_value in value["tables"].values():
        table_value["files"] = [f["path"] for f in table_value["files"]]
    (export / MANIFEST_NAME).write_text(json.dumps(value))
    (export / "topics" / "part-00000.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(ExportIntegrityError,
                       match=r"part-00000.parquet: not a readable Parquet file"):
        verify_export(export, Manifest.read(export))


def test_unlisted_files_are_notices_and_old_manifests_say_so(export: Path) -> None:
    shutil.copy(export / "topics" / "part-00000.parquet", export / "topics" / "part-00099.parquet")
    verified = verify_export(export, Manifest.read(export))
    assert verified.rows["topics"] == 2
    (notice,) = verified.notices
    assert "topics/part-00099.parquet: in table directory topics/ but not listed" in notice
    value = json.loads((export / MANIFEST_NAME).read_text())
    value["schema_version"] = 1
    for table_value in value["tables"].values():
        table_value["files"] = [f["path"] for f in table_value["files"]]
    (export / MANIFEST_NAME).write_text(json.dumps(value))
    old = verify_export(export, Manifest.read(export))
    assert not old.checksummed and "records no file sizes or checksums" in old.notices[0]


def test_a_path_outside_the_export_is_refused(export: Path) -> None:
    value = json.loads((export / MANIFEST_NAME).read_text())
    value["tables"]["topics"]["files"][0]["path"] = "../elsewhere.parquet"
    (export / MANIFEST_NAME).write_text(json.dumps(value))
    with pytest.raises(ExportIntegrityError, match="a path outside the export"):
        verify_export(export, Manifest.read(export))
