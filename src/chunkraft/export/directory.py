"""Writes an export directory atomically: it appears whole, with its manifest, or not at all.

Tables are written as Parquet files (zstd) into a hidden sibling ``.<name>.tmp-<random>``, each
file fsynced; the manifest goes last; the directory is fsynced, renamed to its final name and
the parent fsynced. A crash leaves at most a hidden ``.tmp-`` directory, which
:func:`remove_partial_exports` deletes and readers never look at. An existing target is never
overwritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import TracebackType

import pyarrow as pa
import pyarrow.parquet as pq

from chunkraft.export.manifest import (
    MANIFEST_NAME,
    ExportError,
    FileEntry,
    Manifest,
    TableEntry,
    kafka_cluster_id,
)
from chunkraft.export.tables import TableSpec
from chunkraft.records.files._fsync import fsync_directory

__all__ = ["ExportDirectory", "TableWriter", "file_entry", "remove_partial_exports",
           "sha256_of", "write_export"]

COMPRESSION = "zstd"
_TMP_MARK = ".tmp-"


def sha256_of(path: Path) -> str:
    """The hex SHA-256 of a file's bytes."""
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def file_entry(root: Path, path: Path, rows: int) -> FileEntry:
    """The manifest's facts of a written file: path under ``root``, size, rows, SHA-256."""
    return FileEntry(str(path.relative_to(root)), path.stat().st_size, rows, sha256_of(path))


class TableWriter:
    """Appends Arrow tables (one Parquet row group each) to one table's file."""

    def __init__(self, spec: TableSpec, path: Path) -> None:
        self.spec = spec
        self.path = path
        self.rows = 0
        self._writer = pq.ParquetWriter(path, spec.schema, compression=COMPRESSION)

    def write(self, table: pa.Table) -> None:
        """Appends ``table`` (cast to the declared schema; a mismatch raises)."""
        if table.num_rows == 0:
            return
        self._writer.write_table(table.cast(self.spec.schema))
        self.rows += table.num_rows

    def discard(self) -> None:
        """Closes the file without syncing it (the export is being aborted)."""
        self._writer.close()

    def close(self) -> None:
        self._writer.close()
        with open(self.path, "rb+") as file:
            os.fsync(file.fileno())


class ExportDirectory:
    """An export being written; :meth:`commit` renames it into place, leaving it aborts it.

    Use as a context manager: an exception inside the block (or no commit) removes the
    temporary directory, so the target never appears half written.
    """

    def __init__(self, target: str | os.PathLike[str], signing_key: bytes | None = None) -> None:
        self.target = Path(target)
        self.signing_key = signing_key
        if self.target.exists():
            raise ExportError(f"{self.target} already exists; an export never overwrites")
        self.target.parent.mkdir(parents=True, exist_ok=True)
        self.work = self.target.parent / f".{self.target.name}{_TMP_MARK}{secrets.token_hex(4)}"
        self.work.mkdir()
        self._writers: dict[str, TableWriter] = {}
        self._parts: dict[str, list[tuple[Path, int]]] = {}
        self._done = False

    def table(self, spec: TableSpec) -> TableWriter:
        """The writer of table ``spec`` (created on first use, as ``<name>/part-00000.parquet``;
        use :meth:`add_part` for further parts)."""
        writer = self._writers.get(spec.name)
        if writer is None:
            (self.work / spec.name).mkdir(exist_ok=True)
            writer = TableWriter(spec, self.work / spec.name / "part-00000.parquet")
            self._writers[spec.name] = writer
        return writer

    def add_part(self, table: str, path: Path, rows: int) -> None:
        """Adds a Parquet file written (and fsynced) by someone else, say a worker process,
        under :attr:`work` as a further part of ``table``, holding ``rows`` rows."""
        if not path.is_relative_to(self.work) or not path.is_file():
            raise ExportError(f"{path}: not a file inside the export being written")
        self._parts.setdefault(table, []).append((path, rows))

    def commit(self, manifest: Manifest, specs: tuple[TableSpec, ...]) -> Path:
        """Closes every table (an empty file for a table never written), writes the manifest
        with their row counts and each file's size, rows and SHA-256 (read back from the
        closed, synced file, so it covers exactly the bytes on disk), optionally signs it
        (``manifest.signature`` set by the caller is replaced: see :mod:`.signature`), and
        renames the directory into place. Returns the target."""
        entries: dict[str, TableEntry] = {}
        for spec in specs:
            parts = list(self._parts.get(spec.name, ()))
            if spec.name in self._writers or not parts:
                writer = self.table(spec)
                writer.close()
                parts.append((writer.path, writer.rows))
            parts.sort()
            checks = tuple(file_entry(self.work, path, rows) for path, rows in parts)
            entries[spec.name] = TableEntry(
                sum(rows for _, rows in parts), tuple(c.path for c in checks), spec.columns,
                checks)
        final = replace(manifest, tables=entries, signature=None,
                        cluster_id=kafka_cluster_id(manifest.cluster_id),
                        exported_at_ms=manifest.exported_at_ms or int(time.time() * 1000))
        if self.signing_key is not None:
            from chunkraft.export.signature import sign

            final = sign(final, self.signing_key)
        manifest_path = self.work / MANIFEST_NAME
        with open(manifest_path, "w", encoding="utf-8") as file:
            json.dump(final.to_json(), file, indent=2)
            file.write("\n")
            file.flush()
            os.fsync(file.fileno())
        for spec in specs:
            fsync_directory(self.work / spec.name)
        fsync_directory(self.work)
        if self.target.exists():
            raise ExportError(f"{self.target} appeared while exporting; not overwritten")
        os.rename(self.work, self.target)
        fsync_directory(self.target.parent)
        self._done = True
        return self.target

    def abort(self) -> None:
        if not self._done:
            self._done = True
            for writer in self._writers.values():
                with contextlib.suppress(Exception):  # the directory goes anyway
                    writer.discard()
            shutil.rmtree(self.work, ignore_errors=True)

    def __enter__(self) -> ExportDirectory:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.abort()


def write_export(target: str | os.PathLike[str], manifest: Manifest,
                 tables: Mapping[str, pa.Table], specs: tuple[TableSpec, ...],
                 signing_key: bytes | None = None) -> Path:
    """Writes whole Arrow tables as an export at ``target`` (atomically); a table of ``specs``
    missing from ``tables`` is written empty."""
    with ExportDirectory(target, signing_key) as export:
        for spec in specs:
            if spec.name in tables:
                export.table(spec).write(tables[spec.name])
        return export.commit(manifest, specs)


def remove_partial_exports(parent: str | os.PathLike[str]) -> list[Path]:
    """Deletes the hidden temporary directories a crashed export left under ``parent``."""
    removed: list[Path] = []
    directory = Path(parent)
    if not directory.is_dir():
        return removed
    for entry in directory.iterdir():
        if entry.name.startswith(".") and _TMP_MARK in entry.name and entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed
