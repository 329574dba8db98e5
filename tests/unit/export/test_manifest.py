"""manifest.json: round trip, and every malformed manifest refused with a clear ExportError."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from chunkraft.export.manifest import (
    EXPORT_FORMAT,
    MANIFEST_NAME,
    SCHEMA_VERSION,
    ExportError,
    ExportKind,
    FileEntry,
    Manifest,
    TableEntry,
    kafka_cluster_id,
)


def manifest() -> Manifest:
    return Manifest(kind=ExportKind.BROKER_STATE, cluster_id="c", offset=41, epoch=2,
                    snapshot_time_ms=5, exported_at_ms=6, source="http://b:1", broker_id=3,
                    tables={"local_logs": TableEntry(2, ("local_logs/part-00000.parquet",),
                                                     ("broker_id", "topic"))})


def test_round_trip_through_json(tmp_path: Path) -> None:
    value = manifest().to_json()
    assert value["format"] == EXPORT_FORMAT and value["schema_version"] == SCHEMA_VERSION
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(value))
    assert Manifest.read(tmp_path) == manifest()


def test_file_facts_round_trip_and_version_1_is_still_read(tmp_path: Path) -> None:
    check = FileEntry("local_logs/part-00000.parquet", 1234, 2, "ab" * 32)
    entry = TableEntry(2, (check.path,), ("broker_id",), (check,))
    value = replace(manifest(), tables={"local_logs": entry}).to_json()
    assert value["tables"]["local_logs"]["files"] == [
        {"path": check.path, "size": 1234, "rows": 2, "sha256": "ab" * 32}]
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(value))
    assert Manifest.read(tmp_path).tables["local_logs"].checks == (check,)
    old = {**manifest().to_json(), "schema_version": 1}
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(old))
    read = Manifest.read(tmp_path)
    assert read.schema_version == 1 and read.tables["local_logs"].checks == ()
    with pytest.raises(ValueError, match="checks must list"):
        TableEntry(1, ("a",), (), (FileEntry("b"),))


def test_cluster_ids_are_read_in_kafkas_base64_form() -> None:
    value = uuid.UUID("6d2a4f0e-0000-4000-8000-00000000c0de")
    assert kafka_cluster_id(value) == kafka_cluster_id(str(value)) == "bSpPDgAAQACAAAAAAADA3g"
    assert kafka_cluster_id("bSpPDgAAQACAAAAAAADA3g") == "bSpPDgAAQACAAAAAAADA3g"
    assert kafka_cluster_id("audit-test-cluster") == "audit-test-cluster"
    old = {**manifest().to_json(), "cluster_id": str(value)}
    assert Manifest.from_json(old).cluster_id == "bSpPDgAAQACAAAAAAADA3g"


@pytest.mark.parametrize(("change", "problem"), [
    ({"format": "parquet"}, "not a chunkraft export"),
    ({"schema_version": 99}, "schema version 99"),
    ({"kind": "cluster"}, "malformed manifest"),
    ({"offset": "x"}, "malformed manifest"),
    ({"tables": {"t": {"rows": 1}}}, "malformed manifest"),
    ({"cluster_id": None, "epoch": None}, "malformed manifest"),
])
def test_malformed_manifests_are_refused(tmp_path: Path, change: dict[str, Any],
                                         problem: str) -> None:
    value = {**manifest().to_json(), **change}
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(value))
    with pytest.raises(ExportError, match=problem):
        Manifest.read(tmp_path)


def test_missing_unreadable_and_non_object_manifests(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="not a complete export"):
        Manifest.read(tmp_path)
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(ExportError, match="cannot read the manifest"):
        Manifest.read(tmp_path)
    (tmp_path / MANIFEST_NAME).write_text("[1]")
    with pytest.raises(ExportError, match="not a JSON object"):
        Manifest.read(tmp_path)
