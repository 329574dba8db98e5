"""Small checkpoint files of a log directory, written atomically.

A checkpoint is replaced as a whole: the new text goes to ``<name>.tmp``, is fsynced, renamed over
the old file and the directory is fsynced, so after a crash a reader sees either the old or the new
content, never a mix. Functions here are not thread-safe per path (the broker runs them on its one
event loop).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "fsync_dir",
    "read_offset",
    "read_text",
    "write_atomic",
    "write_offset",
]


def fsync_dir(directory: Path) -> None:
    """Make the directory's entries (creations, renames, deletions) durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a crash leaves either the old or the new file."""
    tmp = path.with_name(path.name + ".tmp")
    data = text.encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def write_offset(path: Path, offset: int) -> None:
    """Atomically store one offset (a decimal line)."""
    write_atomic(path, f"{offset}\n")


def read_offset(path: Path) -> int | None:
    """The offset stored by :func:`write_offset`; None when missing or unreadable.

    An unreadable file is treated as missing because every offset checkpoint can be rebuilt or
    defaulted from the segments; failing the whole log for it would be worse.
    """
    text = read_text(path)
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None
