"""The manifest of an export directory: what was exported, from where, and how many rows.

``manifest.json`` is written last, inside the directory that is then renamed into place, so an
export directory with a manifest is complete. Its fields:

| field | meaning |
|---|---|
| ``format`` | always ``chunkraft-export`` |
| ``schema_version`` | the version of the table layout (:data:`SCHEMA_VERSION`) |
| ``kind`` | ``controller-snapshot`` or ``broker-state`` |
| ``cluster_id`` | the cluster the data belongs to |
| ``offset``, ``epoch`` | the metadata log offset (inclusive) and leader epoch of the image |
| ``snapshot_time_ms`` | when the image was taken (snapshot batch time; broker: answer time) |
| ``exported_at_ms`` | when the export was written |
| ``source`` | the file or URL exported |
| ``broker_id`` | for ``broker-state``: the broker; null otherwise |
| ``tables`` | per table: ``rows``, ``files`` (relative paths) and ``columns`` |
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkraft.errors import ChunkraftError

__all__ = [
    "EXPORT_FORMAT",
    "MANIFEST_NAME",
    "SCHEMA_VERSION",
    "ExportError",
    "ExportKind",
    "Manifest",
    "TableEntry",
]

EXPORT_FORMAT = "chunkraft-export"
SCHEMA_VERSION = 1
MANIFEST_NAME = "manifest.json"


class ExportError(ChunkraftError):
    """An export could not be written, or a directory is not a complete export."""


class ExportKind(enum.StrEnum):
    """What an export directory holds."""

    CONTROLLER_SNAPSHOT = "controller-snapshot"
    BROKER_STATE = "broker-state"


@dataclass(frozen=True)
class TableEntry:
    """One table of an export: its row count, its Parquet files and its column names."""

    rows: int
    files: tuple[str, ...]
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Manifest:
    """The contents of ``manifest.json`` (see the module docstring). Immutable."""

    kind: ExportKind
    cluster_id: str
    offset: int
    epoch: int
    snapshot_time_ms: int
    exported_at_ms: int
    source: str
    tables: Mapping[str, TableEntry] = field(default_factory=dict)
    broker_id: int | None = None
    schema_version: int = SCHEMA_VERSION

    def to_json(self) -> dict[str, Any]:
        return {
            "format": EXPORT_FORMAT,
            "schema_version": self.schema_version,
            "kind": self.kind.value,
            "cluster_id": self.cluster_id,
            "offset": self.offset,
            "epoch": self.epoch,
            "snapshot_time_ms": self.snapshot_time_ms,
            "exported_at_ms": self.exported_at_ms,
            "source": self.source,
            "broker_id": self.broker_id,
            "tables": {name: {"rows": t.rows, "files": list(t.files), "columns": list(t.columns)}
                       for name, t in sorted(self.tables.items())},
        }

    @staticmethod
    def from_json(value: Mapping[str, Any], where: str = "manifest") -> Manifest:
        """Parses a manifest; raises ExportError naming what is wrong."""
        if value.get("format") != EXPORT_FORMAT:
            raise ExportError(f"{where}: not a chunkraft export (format {value.get('format')!r})")
        if value.get("schema_version") != SCHEMA_VERSION:
            raise ExportError(f"{where}: schema version {value.get('schema_version')!r} is not "
                              f"the supported {SCHEMA_VERSION}")
        try:
            return Manifest(
                kind=ExportKind(value["kind"]),
                cluster_id=str(value["cluster_id"]),
                offset=int(value["offset"]),
                epoch=int(value["epoch"]),
                snapshot_time_ms=int(value["snapshot_time_ms"]),
                exported_at_ms=int(value["exported_at_ms"]),
                source=str(value["source"]),
                broker_id=None if value.get("broker_id") is None else int(value["broker_id"]),
                tables={str(name): TableEntry(int(t["rows"]), tuple(map(str, t["files"])),
                                              tuple(map(str, t["columns"])))
                        for name, t in value["tables"].items()},
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ExportError(f"{where}: malformed manifest: {error!r}") from error

    @staticmethod
    def read(directory: str | Path) -> Manifest:
        """The manifest of an export directory; ExportError if it is missing or malformed."""
        path = Path(directory) / MANIFEST_NAME
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ExportError(f"{directory}: no {MANIFEST_NAME}: not a complete export") from None
        except (OSError, ValueError) as error:
            raise ExportError(f"{path}: cannot read the manifest: {error}") from error
        if not isinstance(value, dict):
            raise ExportError(f"{path}: the manifest is not a JSON object")
        return Manifest.from_json(value, str(path))
