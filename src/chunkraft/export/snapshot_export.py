"""Exports a controller snapshot (a ``.checkpoint`` file or a Raft dump) as Parquet tables.

The source's batches are streamed, checked as the snapshot readers check them (CRC, epoch,
cluster id, end marker), decoded and routed by record type to the tables of
:data:`~chunkraft.export.tables.CONTROLLER_TABLES`; each table is written in row groups of
about :data:`ROW_GROUP_ROWS` rows, so memory stays bounded whatever the image's size. A large
source is split over worker processes: worker ``k`` of ``n`` decodes every ``n``-th batch
(``k``, ``k + n``, ...) and writes its own ``part-0000k.parquet`` of each table; every worker
still reads and checks the whole file, so any of them refuses a torn or corrupt source.

The export is written through :class:`~chunkraft.export.directory.ExportDirectory`: a failure
anywhere (a torn source included) leaves no output directory.
"""

from __future__ import annotations

import concurrent.futures
import gc
import multiprocessing
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

from chunkraft.errors import ChunkraftError
from chunkraft.export.columns import UuidNames, rows_to_table
from chunkraft.export.directory import ExportDirectory, TableWriter
from chunkraft.export.manifest import ExportError, ExportKind, Manifest
from chunkraft.export.tables import CONTROLLER_TABLES, TableSpec
from chunkraft.records import decode_records
from chunkraft.records.files import (
    Batch,
    parse_snapshot_name,
    read_embedded_snapshot_batches,
    read_snapshot_batches,
)

__all__ = ["PARALLEL_MIN_BYTES", "ROW_GROUP_ROWS", "SnapshotSource", "export_snapshot"]

ROW_GROUP_ROWS = 250_000
PARALLEL_MIN_BYTES = 32 * 1024 * 1024
"""Sources smaller than this are exported in-process: a worker costs ~1 s to start."""

_DUMP_MAGIC = b"CRDUMP01"


@dataclass(frozen=True)
class SnapshotSource:
    """Where a snapshot's batches are: a ``.checkpoint`` file (``start`` 0) or a Raft dump
    (``start`` = the first byte after its header). ``offset`` is the image's last offset."""

    path: Path
    is_dump: bool
    start: int
    epoch: int
    offset: int
    cluster_id: uuid.UUID | None

    @staticmethod
    def open(path: str | os.PathLike[str]) -> SnapshotSource:
        """Identifies ``path`` by its first bytes (dump magic) or its name (checkpoint)."""
        path = Path(path)
        try:
            with open(path, "rb") as file:
                magic = file.read(len(_DUMP_MAGIC))
        except OSError as error:
            raise ExportError(f"cannot read {path}: {error.strerror or error}") from error
        try:
            if magic == _DUMP_MAGIC:
                # Imported here: the controller package is heavy and only dumps need it.
                from chunkraft.controller.raft.dump import read_dump_header

                header = read_dump_header(path)
                return SnapshotSource(path, True, header.snapshot_start, header.epoch,
                                      header.offset, header.cluster_id)
            snapshot_id = parse_snapshot_name(path)
        except ChunkraftError as error:
            raise ExportError(f"cannot export {path}: {error}") from error
        return SnapshotSource(path, False, 0, snapshot_id.epoch, snapshot_id.end_offset - 1, None)

    def batches(self) -> Iterator[Batch]:
        """The checked batches (raising SnapshotError / CorruptBatchError as they are read)."""
        if self.is_dump:
            return read_embedded_snapshot_batches(self.path, start=self.start, epoch=self.epoch)
        return read_snapshot_batches(self.path)


@dataclass
class _PartResult:
    """What one worker wrote: per table its file (relative to the work dir) and rows."""

    files: dict[str, tuple[str, int]] = field(default_factory=dict)
    cluster_id: uuid.UUID | None = None
    max_time_ms: int = 0
    batches: int = 0


def _export_part(source: SnapshotSource, work: Path, part: int, parts: int,
                 row_group_rows: int) -> _PartResult:
    """Decodes batches ``part``, ``part + parts``, ... of ``source`` into ``part-<part>`` files
    of every table under ``work``. Runs in a worker process or inline."""
    result = _PartResult()
    specs: dict[type, TableSpec] = {spec.row: spec for spec in CONTROLLER_TABLES}
    buffers: dict[type, list[Any]] = {spec.row: [] for spec in CONTROLLER_TABLES}
    writers: dict[type, TableWriter] = {}
    names = UuidNames()

    def flush(cls: type) -> None:
        rows = buffers[cls]
        if not rows:
            return
        writer = writers.get(cls)
        if writer is None:
            spec = specs[cls]
            directory = work / spec.name
            directory.mkdir(exist_ok=True)
            writer = TableWriter(spec, directory / f"part-{part:05d}.parquet")
            writers[cls] = writer
        writer.write(rows_to_table(specs[cls], rows, names))
        buffers[cls] = []

    # Millions of short-lived acyclic tuples: the cyclic GC would rescan them over and over.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for index, batch in enumerate(source.batches()):
            result.batches += 1
            if source.cluster_id is not None and batch.cluster_id != source.cluster_id:
                raise ExportError(f"{source.path}: snapshot batch of cluster {batch.cluster_id} "
                                  f"in a dump of cluster {source.cluster_id}")
            result.cluster_id = batch.cluster_id
            result.max_time_ms = max(result.max_time_ms, batch.append_time_ms)
            if index % parts != part:
                continue
            # A snapshot writes records of one kind in runs: groupby routes a run at C speed.
            for cls, run in groupby(decode_records(batch.records), type):
                buffer = buffers.get(cls)
                if buffer is None:
                    continue  # not a table of the export (a snapshot holds none today)
                buffer.extend(run)
                if len(buffer) >= row_group_rows:
                    flush(cls)
        for cls in buffers:
            flush(cls)
        for cls, writer in writers.items():
            writer.close()
            result.files[specs[cls].name] = (str(writer.path.relative_to(work)), writer.rows)
    except BaseException:
        for writer in writers.values():
            writer.discard()
        raise
    finally:
        if gc_was_enabled:
            gc.enable()
    return result


def _default_workers(source: SnapshotSource) -> int:
    size = os.stat(source.path).st_size - source.start
    return min(2, os.cpu_count() or 1) if size >= PARALLEL_MIN_BYTES else 1


def export_snapshot(source: str | os.PathLike[str], out: str | os.PathLike[str], *,
                    workers: int | None = None, row_group_rows: int = ROW_GROUP_ROWS,
                    source_label: str | None = None,
                    signing_key: bytes | None = None) -> Manifest:
    """Exports the snapshot file or Raft dump ``source`` to the new directory ``out``
    (its manifest signed with ``signing_key`` if given: :mod:`chunkraft.export.signature`).

    ``workers``: processes decoding in parallel (None: 2 for sources of 32 MiB or more on a
    machine with 2+ cores, else 1). ``source_label`` is what the manifest names as the source
    (default: the path). Raises :class:`ExportError` for an existing ``out``, an unreadable,
    torn or corrupt source, leaving no ``out`` behind; returns the manifest written.
    """
    if Path(out).exists():
        raise ExportError(f"{out} already exists; an export never overwrites")
    snapshot = SnapshotSource.open(source)
    parts = workers if workers is not None else _default_workers(snapshot)
    if parts < 1:
        raise ValueError("workers must be at least 1")
    with ExportDirectory(out, signing_key) as export:
        try:
            if parts == 1:
                results = [_export_part(snapshot, export.work, 0, 1, row_group_rows)]
            else:
                results = _run_workers(snapshot, export.work, parts, row_group_rows)
        except ChunkraftError as error:
            if isinstance(error, ExportError):
                raise
            raise ExportError(f"cannot export {snapshot.path}: {error}") from error
        except OSError as error:
            raise ExportError(f"cannot export {snapshot.path}: {error}") from error
        for result in results:
            for name, (relative, rows) in result.files.items():
                export.add_part(name, export.work / relative, rows)
        cluster_id = results[0].cluster_id or snapshot.cluster_id
        snapshot_time_ms = max(result.max_time_ms for result in results)
        if snapshot_time_ms <= 0:
            snapshot_time_ms = int(os.stat(snapshot.path).st_mtime * 1000)
        manifest = Manifest(
            kind=ExportKind.CONTROLLER_SNAPSHOT,
            cluster_id=str(cluster_id) if cluster_id is not None else "",
            offset=snapshot.offset,
            epoch=snapshot.epoch,
            snapshot_time_ms=snapshot_time_ms,
            exported_at_ms=int(time.time() * 1000),
            source=source_label if source_label is not None else str(snapshot.path),
        )
        export.commit(manifest, CONTROLLER_TABLES)
    return Manifest.read(Path(out))


def _export_part_in_worker(source: SnapshotSource, work: Path, part: int, parts: int,
                           row_group_rows: int) -> _PartResult:
    """:func:`_export_part` with its errors flattened into ExportError: the library's errors
    take several constructor arguments and would not survive the trip back through pickle."""
    try:
        return _export_part(source, work, part, parts, row_group_rows)
    except ExportError:
        raise
    except (ChunkraftError, OSError) as error:
        raise ExportError(f"cannot export {source.path}: {error}") from None


def _run_workers(snapshot: SnapshotSource, work: Path, parts: int,
                 row_group_rows: int) -> list[_PartResult]:
    # spawn, not fork: the caller may have threads (fork would copy their locks mid-use).
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=parts, mp_context=context) as pool:
        futures = [pool.submit(_export_part_in_worker, snapshot, work, part, parts, row_group_rows)
                   for part in range(parts)]
        try:
            return [future.result() for future in futures]
        except concurrent.futures.process.BrokenProcessPool as error:
            raise ExportError(f"cannot export {snapshot.path}: a worker process died "
                              f"({error})") from error
        except BaseException:
            for future in futures:
                future.cancel()
            raise
