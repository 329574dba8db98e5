"""Small checkpoint files of a log directory, written atomically.

A checkpoint is replaced as a whole: the new text goes to ``<name>.tmp``, is fsynced, renamed over
the old file and the directory is fsynced, so after a crash a reader sees either the old or the new
content, never a mix. Functions here are not thread-safe per path: two writers of one file may
interleave their ``.tmp``; the broker has one writer per file at a time (its main event loop, or
its one disk worker thread, which the loop waits for before writing itself; see
``ReplicaManager``). :func:`write_atomic_at` writes relative to an open directory, so a worker
thread never writes into a directory that replaced the one it was given (a log deleted and
recreated under the same name meanwhile).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "fsync_dir",
    "read_offset",
    "read_text",
    "write_atomic",
    "write_atomic_at",
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
    _write_synced(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), text)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _write_synced(fd: int, text: str) -> None:
    """Writes all of ``text`` to the new file ``fd``, fsyncs and closes it."""
    try:
        view = memoryview(text.encode())
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def read_text(path: Path) -> str | None:
    """The file's text, or None when it does not exist."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def write_atomic_at(dir_fd: int, name: str, text: str) -> None:
    """:func:`write_atomic` of ``name`` inside the directory open as ``dir_fd``.

    Every step is relative to the descriptor, so the file lands in that directory even if it
    was renamed meanwhile (a log being deleted is renamed first, then removed), never in a new
    directory created at the old path. OSError if the directory is gone."""
    tmp = name + ".tmp"
    _write_synced(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dir_fd),
                  text)
    os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    os.fsync(dir_fd)


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
