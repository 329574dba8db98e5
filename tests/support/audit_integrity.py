"""Damaged and tampered exports: the ways an export can differ from its manifest, each with
what an audit must do (exit 2 naming the file and what differs, or audit the listed files only
and say what it ignored).

Each :data:`DAMAGES` entry changes a clean controller-snapshot export in place (written by
:func:`tests.support.audit_snapshots.write_snapshot_export`) and returns the
:class:`Expected` outcome. Both engines must give it (the engine-agreement test runs them all).
Some damages rewrite the manifest's facts too, as a broken or old exporter would, so that the
damage gets past the manifest and is met only by the engines' own reading (in Spark: inside an
executor).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from chunkraft.export.directory import sha256_of
from chunkraft.export.manifest import MANIFEST_NAME

__all__ = ["CHUNKS_FILE", "DAMAGES", "Expected", "refresh_facts"]

CHUNKS_FILE = "chunks/part-00000.parquet"


@dataclass(frozen=True)
class Expected:
    """What the audit of a damaged export must do: its exit status and, on stderr's one line,
    the fragments it must contain (the file's path is always one for exit 2); for an audit that
    runs, the notice its report must carry."""

    exit_code: int
    fragments: tuple[str, ...] = ()
    notice: str | None = None


def _manifest(export: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((export / MANIFEST_NAME).read_text(encoding="utf-8"))
    return value


def _write_manifest(export: Path, value: dict[str, Any]) -> None:
    (export / MANIFEST_NAME).write_text(json.dumps(value, indent=2), encoding="utf-8")


def refresh_facts(export: Path, relative: str) -> None:
    """Rewrites the manifest's size, rows and SHA-256 of ``relative`` from the file as it now
    is (an exporter that wrote a broken file and summed what it wrote)."""
    value = _manifest(export)
    path = export / relative
    table = relative.split("/", 1)[0]
    for entry in value["tables"][table]["files"]:
        if entry["path"] == relative:
            entry["size"] = path.stat().st_size
            entry["sha256"] = sha256_of(path)
    _write_manifest(export, value)


def _delete_listed(export: Path) -> Expected:
    (export / CHUNKS_FILE).unlink()
    return Expected(2, (CHUNKS_FILE, "listed in the manifest but missing"))


def _add_unlisted(export: Path) -> Expected:
    # A copy of the listed part: read, it would double every chunk (and fire rules).
    shutil.copy(export / CHUNKS_FILE, export / "chunks" / "part-00099.parquet")
    return Expected(0, notice="chunks/part-00099.parquet: in table directory chunks/ but not "
                              "listed in the manifest; ignored")


def _delete_a_row(export: Path) -> Expected:
    # One chunk row gone, the manifest untouched: the file's size and sum differ.
    path = export / CHUNKS_FILE
    table = pq.read_table(path)
    pq.write_table(table.slice(1), path, compression="zstd")
    return Expected(2, (CHUNKS_FILE, "differs"))


def _flip_a_byte(export: Path) -> Expected:
    path = export / CHUNKS_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    return Expected(2, (CHUNKS_FILE, "SHA-256 differs"))


def _row_count_lies(export: Path) -> Expected:
    # A manifest whose table total disagrees with its files (one file's rows edited too).
    value = _manifest(export)
    value["tables"]["chunks"]["files"][0]["rows"] += 1
    value["tables"]["chunks"]["rows"] += 1
    _write_manifest(export, value)
    return Expected(2, (CHUNKS_FILE, "row count differs"))


def _not_parquet_summed(export: Path) -> Expected:
    # Garbage where the file was, summed by the exporter: the footer cannot be read.
    (export / CHUNKS_FILE).write_bytes(b"this is not a parquet file\n" * 40)
    refresh_facts(export, CHUNKS_FILE)
    return Expected(2, (CHUNKS_FILE, "not a readable Parquet file"))


def _bad_page_summed(export: Path) -> Expected:
    # The first page header of the first column chunk overwritten, footer intact, summed by the
    # exporter: only decoding the data fails (in Spark, inside an executor).
    path = export / CHUNKS_FILE
    data = bytearray(path.read_bytes())
    data[4:36] = b"\xff" * 32
    path.write_bytes(bytes(data))
    refresh_facts(export, CHUNKS_FILE)
    return Expected(2, ("cannot read", CHUNKS_FILE))


DAMAGES: dict[str, Callable[[Path], Expected]] = {
    "listed file deleted": _delete_listed,
    "unlisted file added": _add_unlisted,
    "one row deleted": _delete_a_row,
    "one byte flipped": _flip_a_byte,
    "row count edited": _row_count_lies,
    "not parquet, summed": _not_parquet_summed,
    "bad data page, summed": _bad_page_summed,
}
"""Each damage, applied to a clean export in place; returns what an audit must do."""
