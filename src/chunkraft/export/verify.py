"""Checks an export directory against its manifest before anything reads it.

The manifest (schema version 2) lists every file of every table with its size, Parquet row
count and SHA-256. :func:`verify_export` checks, for each listed file, that it is there, a
regular file inside the export, of the listed size and SHA-256, a readable Parquet file (its
footer) with the listed rows and the table's columns; and that each table's files add up to
the table's row count. Any difference raises :class:`ExportIntegrityError` naming the file and
what differs. A file in a table's directory that the manifest does not list is not an error:
readers ignore it (they read only listed files), and it is returned as a notice.

What this protects against: files damaged, truncated, replaced, added or removed after the
export, in transit or at rest. It does not stop someone who rewrites the manifest too (the sums
are in it): that takes a keyed signature (:mod:`chunkraft.export.signature`).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pyarrow as pa
import pyarrow.parquet as pq

from chunkraft.export.directory import sha256_of
from chunkraft.export.manifest import ExportError, FileEntry, Manifest

__all__ = ["ExportIntegrityError", "VerifiedExport", "verify_export"]


class ExportIntegrityError(ExportError):
    """A file of an export is missing or differs from what its manifest records."""


@dataclass(frozen=True)
class VerifiedExport:
    """What :func:`verify_export` found: ``rows`` per table counted from the listed files'
    Parquet footers (what a reader of exactly those files reads), ``notices`` (unlisted
    files ignored, a manifest too old to hold checksums) and whether checksums were
    compared."""

    rows: dict[str, int]
    notices: tuple[str, ...]
    checksummed: bool


def _listed_path(directory: Path, relative: str) -> Path:
    pure = PurePosixPath(relative)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise ExportIntegrityError(f"{directory}: the manifest lists {relative!r}, a path "
                                   "outside the export")
    return directory / pure


def _check_file(path: Path, check: FileEntry | None, columns: tuple[str, ...],
                checksums: bool) -> int:
    """Checks one listed file; returns its Parquet row count."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise ExportIntegrityError(f"{path}: listed in the manifest but missing") from None
    except OSError as error:
        raise ExportIntegrityError(f"{path}: cannot be read: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ExportIntegrityError(f"{path}: listed in the manifest but not a regular file")
    if check is not None and check.size is not None and info.st_size != check.size:
        raise ExportIntegrityError(f"{path}: size differs: {info.st_size} bytes, the manifest "
                                   f"records {check.size}")
    if checksums and check is not None and check.sha256 is not None:
        try:
            actual = sha256_of(path)
        except OSError as error:
            raise ExportIntegrityError(f"{path}: cannot be read: {error.strerror}") from None
        if actual != check.sha256:
            raise ExportIntegrityError(f"{path}: SHA-256 differs: {actual}, the manifest "
                                       f"records {check.sha256}")
    try:
        metadata = pq.read_metadata(path)
        names = set(metadata.schema.to_arrow_schema().names)
    except (pa.ArrowException, OSError, ValueError) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ExportIntegrityError(f"{path}: not a readable Parquet file: {first}") from None
    if check is not None and check.rows is not None and metadata.num_rows != check.rows:
        raise ExportIntegrityError(f"{path}: row count differs: {metadata.num_rows} rows, the "
                                   f"manifest records {check.rows}")
    missing = [c for c in columns if c not in names]
    if missing:
        raise ExportIntegrityError(f"{path}: has no column {', '.join(missing)} of its table")
    return int(metadata.num_rows)


def _unlisted(directory: Path, table_dirs: set[str], listed: set[str]) -> list[str]:
    notices = []
    for name in sorted(table_dirs):
        root = directory / name
        if not root.is_dir():
            continue
        for base, _, files in sorted(os.walk(root)):
            for file in sorted(files):
                path = Path(base) / file
                if path.relative_to(directory).as_posix() not in listed:
                    notices.append(f"{path}: in table directory {name}/ but not listed in the "
                                   "manifest; ignored")
    return notices


def verify_export(directory: str | Path, manifest: Manifest, *,
                  checksums: bool = True) -> VerifiedExport:
    """Checks every file ``manifest`` lists under ``directory`` (see the module docstring);
    ``checksums=False`` skips the SHA-256 comparison only (sizes, footers and row counts are
    still checked). Raises ExportIntegrityError on the first difference."""
    directory = Path(directory)
    rows: dict[str, int] = {}
    listed: set[str] = set()
    table_dirs: set[str] = set()
    notices: list[str] = []
    for name, entry in sorted(manifest.tables.items()):
        total = 0
        for index, relative in enumerate(entry.files):
            path = _listed_path(directory, relative)
            listed.add(PurePosixPath(relative).as_posix())
            table_dirs.add(PurePosixPath(relative).parts[0])
            check = entry.checks[index] if entry.checks else None
            total += _check_file(path, check, entry.columns, checksums)
        table_dirs.add(name)
        if total != entry.rows:
            raise ExportIntegrityError(
                f"{directory / name}: row count differs: the listed files hold {total} rows, "
                f"the manifest records {entry.rows}")
        rows[name] = total
    checksummed = checksums and all(entry.checks for entry in manifest.tables.values())
    if not all(entry.checks for entry in manifest.tables.values()):
        notices.append(f"{directory}: the manifest (schema version {manifest.schema_version}) "
                       "records no file sizes or checksums; only presence and row counts "
                       "were checked")
    notices += _unlisted(directory, table_dirs - {""}, listed)
    return VerifiedExport(rows, tuple(notices), checksummed)
