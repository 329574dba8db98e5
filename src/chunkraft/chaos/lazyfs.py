"""lazyfs: a FUSE file system that forgets, at a power cut, whatever was not made durable.

``python -m chunkraft.chaos.lazyfs SOURCE MOUNTPOINT STATE_DIR`` copies the tree ``SOURCE``
into ``STATE_DIR`` (live and durable: the tree at mount time is durable), mounts the file
system on ``MOUNTPOINT`` and serves it in the foreground until it is unmounted or killed. What
is durable when is :mod:`chunkraft.chaos.lazyfs_model`'s strict POSIX model: file data and
size through fsync / fdatasync, directory entries (creates, renames, links, unlinks) through
an fsync of their directory. A power cut is SIGKILL of this daemon (after the processes using
the mount were stopped); :func:`~chunkraft.chaos.lazyfs_model.materialize` then builds the
tree that survived from ``STATE_DIR``. ``chaos/power.py`` does both for a cluster.

The kernel's own page cache sits in front of the daemon: a ``write`` reaches it at once (no
writeback cache), pages dirtied through an ``mmap`` when the kernel writes them back (at the
latest before it sends an fsync for that file), so both land in the live view before any
fsync of theirs. Killing the daemon drops whatever the kernel still held for it.

Mounted with ``hard_remove`` (an unlinked open file is really unlinked; libfuse passes its
operations a null path and the handle) and ``use_ino`` (the model's inode ids). Hard links
are separate inodes to the kernel (libfuse's high-level API names nodes by path), so their
pages are cached separately; the controller only links a file no one writes. Every operation
runs under one lock (libfuse calls from several threads).
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

import mfusepy

from chunkraft.chaos.lazyfs_model import LazyModel

__all__ = ["FSNAME", "LazyFS", "main"]

FSNAME = "chunkraft-lazyfs"
"""The ``fsname`` of every lazyfs mount (the source column of ``/proc/self/mountinfo``)."""

logger = logging.getLogger(__name__)


class LazyFS(mfusepy.Operations):  # type: ignore[misc]
    """mfusepy operations over one :class:`LazyModel`; thread-safe (one lock)."""

    use_ns = True
    flag_nullpath_ok = True  # operations on an unlinked open file get the handle, no path

    def __init__(self, model: LazyModel) -> None:
        self.model = model
        self._lock = threading.Lock()

    def _call(self, method: Any, *args: Any) -> Any:
        with self._lock:
            try:
                return method(*args)
            except OSError as error:
                raise mfusepy.FuseOSError(error.errno or errno.EIO) from None

    # ------------------------------------------------------------------ attributes

    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, Any]:
        return dict(self._call(self.model.getattr, path, fh))

    def access(self, path: str, amode: int) -> int:
        self._call(self.model.getattr, path)
        return 0

    def chmod(self, path: str | None, mode: int) -> int:
        self._call(self.model.chmod, path, mode)
        return 0

    def chown(self, path: str | None, uid: int, gid: int) -> int:
        self._call(self.model.getattr, path)  # owners are not modelled
        return 0

    def utimens(self, path: str | None, times: tuple[int, int] | None = None) -> int:
        self._call(self.model.utimens, path, times)
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        info = os.statvfs(self.model.state_dir)
        return {key: getattr(info, key) for key in (
            "f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree",
            "f_favail", "f_namemax")}

    # ------------------------------------------------------------------ namespace

    def readdir(self, path: str, fh: int) -> list[tuple[str, dict[str, int], int]]:
        # Each entry needs its inode number: readdir(3) skips entries whose d_ino is 0.
        entries = self._call(self.model.readdir, path)
        own = self._call(self.model.getattr, path)
        dots = [(".", {"st_ino": own["st_ino"], "st_mode": own["st_mode"]}, 0),
                ("..", {"st_ino": own["st_ino"], "st_mode": own["st_mode"]}, 0)]
        return dots + [(name, {"st_ino": ino, "st_mode": mode}, 0)
                       for name, ino, mode in entries]

    def mkdir(self, path: str, mode: int) -> int:
        self._call(self.model.mkdir, path, mode)
        return 0

    def rmdir(self, path: str) -> int:
        self._call(self.model.rmdir, path)
        return 0

    def unlink(self, path: str) -> int:
        self._call(self.model.unlink, path)
        return 0

    def rename(self, old: str, new: str) -> int:
        self._call(self.model.rename, old, new)
        return 0

    def link(self, target: str, source: str) -> int:
        self._call(self.model.link, source, target)  # mfusepy: link(new name, existing)
        return 0

    # ------------------------------------------------------------------ files

    def create(self, path: str, mode: int, flags: int) -> int:
        return int(self._call(self.model.create, path, mode))

    def open(self, path: str, flags: int) -> int:
        return int(self._call(self.model.open, path, flags))

    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        return bytes(self._call(self.model.read, fh, size, offset))

    def write(self, path: str | None, data: bytes, offset: int, fh: int) -> int:
        return int(self._call(self.model.write, fh, data, offset))

    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        self._call(self.model.truncate, path, length, fh)
        return 0

    def flush(self, path: str | None, fh: int) -> int:
        return 0

    def release(self, path: str | None, fh: int) -> int:
        self._call(self.model.release, fh)
        return 0

    def fsync(self, path: str | None, datasync: int, fh: int) -> int:
        self._call(self.model.fsync, path, fh)
        return 0

    def fsyncdir(self, path: str | None, datasync: int, fh: int) -> int:
        if path is None:
            raise mfusepy.FuseOSError(errno.EBADF)
        self._call(self.model.fsyncdir, path)
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m chunkraft.chaos.lazyfs",
        description="Mount a FUSE file system that keeps unsynced writes in memory only.")
    parser.add_argument("source", type=Path, help="the initial tree (durable at mount)")
    parser.add_argument("mountpoint", type=Path)
    parser.add_argument("state_dir", type=Path, help="a fresh directory for live and "
                        "durable state (materialize() reads it after a cut)")
    parser.add_argument("--debug", action="store_true", help="libfuse's request log")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s lazyfs %(levelname)s %(message)s")
    model = LazyModel(args.state_dir, args.source)
    logger.info("serving %s on %s (state in %s)", args.source, args.mountpoint, args.state_dir)
    try:
        mfusepy.FUSE(LazyFS(model), str(args.mountpoint), foreground=True, nothreads=False,
                     debug=args.debug, fsname=FSNAME, hard_remove=True, use_ino=True,
                     big_writes=True, max_write=1 << 17)
    finally:
        model.close()
        logger.info("unmounted %s: %d fsyncs, %d directory fsyncs, %d bytes made durable",
                    args.mountpoint, model.fsyncs, model.fsyncdirs, model.bytes_synced)
    return 0


if __name__ == "__main__":
    sys.exit(main())
