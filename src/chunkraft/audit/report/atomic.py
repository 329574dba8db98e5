"""Writes one report file atomically: readers see the old file or the whole new one.

The text goes to a hidden sibling ``.<name>.tmp-<random>``, is fsynced, renamed over the
target and the directory fsynced; a failure removes the temporary file. A crash can leave such a
hidden file behind, never a half-written report.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from chunkraft.records.files._fsync import fsync_directory

__all__ = ["TMP_MARK", "write_text_atomic"]

TMP_MARK = ".tmp-"


def write_text_atomic(path: Path, text: str) -> Path:
    """Replaces ``path`` with ``text`` (UTF-8) atomically and durably; returns ``path``."""
    temporary = path.parent / f".{path.name}{TMP_MARK}{secrets.token_hex(4)}"
    try:
        with open(temporary, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    fsync_directory(path.parent)
    return path
