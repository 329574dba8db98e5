"""The manifest of an export directory: what was exported, from where, and how many rows.

``manifest.json`` is written last, inside the directory that is then renamed into place, so an
export directory with a manifest is complete. Its fields:

| field | meaning |
|---|---|
| ``format`` | always ``chunkraft-export`` |
| ``schema_version`` | the version of this layout (:data:`SCHEMA_VERSION`; 1 is still read) |
| ``kind`` | ``controller-snapshot`` or ``broker-state`` |
| ``cluster_id`` | the cluster the data belongs to, in Kafka's base64 form |
| ``offset``, ``epoch`` | the metadata log offset (inclusive) and leader epoch of the image |
| ``snapshot_time_ms`` | when the image was taken (snapshot batch time; broker: answer time) |
| ``exported_at_ms`` | when the export was written |
| ``source`` | the file or URL exported |
| ``broker_id`` | for ``broker-state``: the broker; null otherwise |
| ``tables`` | per table: ``rows``, ``files`` and ``columns`` |
| ``signature`` | optional: ``{"algorithm": "hmac-sha256", "value": HEX}`` (:mod:`.signature`) |

Each of a table's ``files`` is ``{"path", "size", "rows", "sha256"}`` (schema version 2): the
relative path, its size in bytes, its Parquet row count and the SHA-256 of its bytes, so a
reader can check it has exactly the files the exporter wrote (:mod:`chunkraft.export.verify`).
Version 1 manifests (paths only) are still read; their files carry no facts to check.
"""

from __future__ import annotations

import enum
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chunkraft.errors import ChunkraftError
from chunkraft.records.uuids import kafka_uuid_str, parse_kafka_uuid

__all__ = [
    "EXPORT_FORMAT",
    "MANIFEST_NAME",
    "SCHEMA_VERSION",
    "ExportError",
    "ExportKind",
    "FileEntry",
    "Manifest",
    "TableEntry",
    "kafka_cluster_id",
]

EXPORT_FORMAT = "chunkraft-export"
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
"""1: files are bare paths (no size, rows or checksum); 2: each file with its facts."""
MANIFEST_NAME = "manifest.json"


class ExportError(ChunkraftError):
    """An export could not be written, or a directory is not a complete export."""


class ExportKind(enum.StrEnum):
    """What an export directory holds."""

    CONTROLLER_SNAPSHOT = "controller-snapshot"
    BROKER_STATE = "broker-state"


def kafka_cluster_id(value: object) -> str:
    """A cluster id in Kafka's 22-character base64 form, whether given as a ``uuid.UUID``,
    that form or the hex form; other text (a test's name, an empty id) as it is."""
    if isinstance(value, uuid.UUID):
        return kafka_uuid_str(value)
    text = str(value or "")
    try:
        return kafka_uuid_str(parse_kafka_uuid(text))
    except ValueError:
        return text


@dataclass(frozen=True)
class FileEntry:
    """One Parquet file of a table as the exporter wrote it: path relative to the export,
    size in bytes, row count and the hex SHA-256 of its bytes (all None in a version 1
    manifest, which recorded paths only)."""

    path: str
    size: int | None = None
    rows: int | None = None
    sha256: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "rows": self.rows, "sha256": self.sha256}


@dataclass(frozen=True)
class TableEntry:
    """One table of an export: its row count, its Parquet files (paths, in ``files``) and
    column names; ``checks`` holds each file's facts, in the order of ``files`` (empty when
    the manifest has none: version 1)."""

    rows: int
    files: tuple[str, ...]
    columns: tuple[str, ...]
    checks: tuple[FileEntry, ...] = ()

    def __post_init__(self) -> None:
        if self.checks and tuple(c.path for c in self.checks) != self.files:
            raise ValueError("checks must list the table's files, in order")

    def files_json(self) -> list[Any]:
        if self.checks:
            return [check.to_json() for check in self.checks]
        return list(self.files)


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
    signature: Mapping[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        """The manifest as ``manifest.json`` holds it (with its signature, if any)."""
        value = self.unsigned_json()
        if self.signature is not None:
            value["signature"] = dict(self.signature)
        return value

    def unsigned_json(self) -> dict[str, Any]:
        """:meth:`to_json` without the signature: what a signature covers."""
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
            "tables": {name: {"rows": t.rows, "files": t.files_json(),
                              "columns": list(t.columns)}
                       for name, t in sorted(self.tables.items())},
        }

    @staticmethod
    def from_json(value: Mapping[str, Any], where: str = "manifest") -> Manifest:
        """Parses a manifest; raises ExportError naming what is wrong."""
        if value.get("format") != EXPORT_FORMAT:
            raise ExportError(f"{where}: not a chunkraft export (format {value.get('format')!r})")
        version = value.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise ExportError(f"{where}: schema version {version!r} is not one of the supported "
                              f"{', '.join(map(str, READABLE_VERSIONS))}")
        try:
            signature = value.get("signature")
            if signature is not None and not (
                    isinstance(signature, dict)
                    and all(isinstance(signature.get(k), str) for k in ("algorithm", "value"))):
                raise ValueError(f"signature {signature!r} is not {{algorithm, value}}")
            return Manifest(
                kind=ExportKind(value["kind"]),
                cluster_id=kafka_cluster_id(_text(value["cluster_id"])),
                offset=int(value["offset"]),
                epoch=int(value["epoch"]),
                snapshot_time_ms=int(value["snapshot_time_ms"]),
                exported_at_ms=int(value["exported_at_ms"]),
                source=str(value["source"]),
                broker_id=None if value.get("broker_id") is None else int(value["broker_id"]),
                tables={str(name): _table(t, int(version))
                        for name, t in value["tables"].items()},
                schema_version=int(version),
                signature=None if signature is None else {
                    "algorithm": signature["algorithm"], "value": signature["value"]},
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


def _text(value: Any) -> str:
    if value is None:
        raise ValueError("cluster_id is null")
    return str(value)


def _table(value: Mapping[str, Any], version: int) -> TableEntry:
    rows, columns = int(value["rows"]), tuple(map(str, value["columns"]))
    if version == 1 or all(isinstance(f, str) for f in value["files"]):
        # version 1, or a manifest built without file facts (then nothing to check them by)
        return TableEntry(rows, tuple(map(str, value["files"])), columns)
    checks = tuple(FileEntry(str(f["path"]), int(f["size"]), int(f["rows"]), str(f["sha256"]))
                   for f in value["files"])
    return TableEntry(rows, tuple(c.path for c in checks), columns, checks)
