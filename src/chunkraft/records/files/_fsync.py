"""Durability helpers: a rename or a new file survives a crash only once its directory is synced."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["fsync_directory", "fsync_file"]


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Flushes ``directory``'s entries (new, renamed or removed files) to stable storage."""
    fd = os.open(Path(directory), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_file(path: str | os.PathLike[str]) -> None:
    """Flushes the content of the file at ``path`` (written by someone else) to stable storage."""
    fd = os.open(Path(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
