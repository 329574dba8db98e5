"""The files of a Raft dump's cycle beside the journal: ``dump``, pysyncobj's placeholder
(``dump.tmp``), the next dump being written (``dump.next``) and the links the API process
loads a handed-over dump from (``dump.restore-*``). Used by ``node.py`` from the tick thread."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from chunkraft.records.files._fsync import fsync_directory

__all__ = ["clean_dump_leftovers", "export_dump", "install_next_dump", "next_dump_path",
           "place_placeholder"]

logger = logging.getLogger(__name__)


def next_dump_path(dump: Path) -> Path:
    return dump.with_name(dump.name + ".next")


def place_placeholder(placeholder: Path, dump: Path) -> None:
    """What pysyncobj renames over the dump as soon as its serializer returns: a hard link to
    the previous dump (so the dump stays whole), or an empty file when there is none."""
    placeholder.unlink(missing_ok=True)
    if dump.exists() and dump.stat().st_size > 0:
        os.link(dump, placeholder)
    else:
        placeholder.write_bytes(b"")


def install_next_dump(dump: Path) -> bool:
    """Renames the written ``dump.next`` over the dump, durably; False if that failed."""
    upcoming = next_dump_path(dump)
    try:
        # Renaming a hard link onto its own inode does nothing, so it may still be there.
        dump.with_name(dump.name + ".tmp").unlink(missing_ok=True)
        os.replace(upcoming, dump)
        fsync_directory(dump.parent)
    except OSError:
        logger.exception("installing the Raft dump failed; the journal is kept whole")
        upcoming.unlink(missing_ok=True)
        return False
    return True


def clean_dump_leftovers(dump: Path) -> None:
    """Removes what a crash mid-dump leaves: a next dump, pysyncobj's renames and transfers,
    links of handed-over dumps, and the empty placeholder of a first dump never completed."""
    for suffix in (".next", ".tmp", ".1.tmp"):  # ours, pysyncobj's rename, a transfer
        dump.with_name(dump.name + suffix).unlink(missing_ok=True)
    for link in dump.parent.glob(dump.name + ".restore-*"):
        link.unlink(missing_ok=True)
    if dump.exists() and dump.stat().st_size == 0:
        # A placeholder from a first dump that never completed: the journal is still whole.
        logger.info("removing the empty placeholder of an unfinished first Raft dump")
        dump.unlink()


def export_dump(directory: Path | None, retain: int, dump: Path, offset: int,
                epoch: int) -> Any:
    """Starts the export of the new dump (``metadata.snapshot.export.dir``): links the file
    and spawns a detached process (returned, for tests); None without an export directory."""
    if directory is None:
        return None
    try:
        from chunkraft.export.auto_export import start_dump_export

        return start_dump_export(dump, offset, epoch, directory, retain)
    except Exception:
        logger.exception("starting the snapshot export of the dump at offset %d failed", offset)
        return None
