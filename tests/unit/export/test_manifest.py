"""manifest.json: round trip, and every malformed manifest refused with a clear ExportError."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chunkraft.export.manifest import (
    EXPORT_FORMAT,
    MANIFEST_NAME,
    SCHEMA_VERSION,
    ExportError,
    ExportKind,
    Manifest,
    TableEntry,
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
