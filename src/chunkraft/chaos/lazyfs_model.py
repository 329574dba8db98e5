"""LazyModel: a file system's live view, and the part of it a power cut would leave.

The model behind ``chaos/lazyfs.py`` (the FUSE daemon), kept free of FUSE so that sequences of
operations can be tested directly. It is a strict POSIX model of what survives a power cut,
in the spirit of Jepsen's LazyFS:

- **Live view** (the page cache): every write, truncate, create, rename, link, unlink, mkdir
  and rmdir is visible at once to every reader, as on any file system.
- **File data and size** become durable only through ``fsync`` or ``fdatasync`` of that file
  (the two are the same here): the file's durable bytes become its live bytes, its durable
  size its live size. Nothing else ever writes file data back: no timer, no close, no munmap,
  no rename (ext4's ``auto_da_alloc`` is not modelled).
- **Directory entries** become durable only through ``fsync`` of that directory (FUSE's
  ``fsyncdir``): the directory's durable listing (name -> inode) becomes its live listing.
  So a create, rename, link or unlink is lost by a cut unless the directory that holds the
  name was fsynced after it; a rename replacing a file reverts to the old file; a rename
  across two directories is two changes, each durable with its own directory. ``fsync`` of
  a file does not make its name durable, nor does ``fsyncdir`` make the files' data durable.
- **What a cut leaves** (:func:`materialize`): the durable listings from the root down. A name
  durable in its directory whose inode's data was never fsynced is an empty file; a file
  that was never durably named is gone, whatever was fsynced of its data; a directory
  durable in its parent whose own listing was never fsynced is empty; two durable names of
  one inode are hard links; a directory reachable twice (a half-durable cross-directory
  rename) appears once, under the first name in sorted order.
- Not modelled: modes, owners and times (a file gets the mode it had when its name was last
  made durable); torn writes below a range (an fsync cut short may have made some of its
  dirty ranges durable, as a disk might, but a range is copied whole).

The initial tree (``source``) is durable when the model is created.

Storage under ``state_dir``: ``live/<id>`` holds each regular file's live bytes,
``durable/data/<id>`` its durable bytes, and ``durable/dirs/<id>.json`` each directory's
durable listing (``{"name": [id, "f" | "d", mode]}``, replaced atomically). The daemon is
killed with SIGKILL but the machine keeps its page cache, so these writes need no fsync of
their own: each is complete before the operation that made it returns.

Not thread-safe: the daemon calls it under one lock.
"""

from __future__ import annotations

import bisect
import errno
import json
import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ROOT", "LazyModel", "MaterializeReport", "materialize"]

ROOT = 1
"""The root directory's inode id."""

_COPY_CHUNK = 1 << 20


def _error(code: int, path: str = "") -> OSError:
    return OSError(code, os.strerror(code), path) if path else OSError(code, os.strerror(code))


@dataclass
class _Inode:
    """A live inode; ``children`` for directories, ``size`` / ``dirty`` for regular files."""

    id: int
    is_dir: bool
    mode: int
    nlink: int = 0
    children: dict[str, int] = field(default_factory=dict)
    size: int = 0
    durable_size: int = 0
    dirty: list[tuple[int, int]] = field(default_factory=list)
    """Byte ranges [start, end) written since the last fsync, sorted and disjoint."""
    opens: int = 0
    atime_ns: int = 0
    mtime_ns: int = 0
    ctime_ns: int = 0


def _add_range(ranges: list[tuple[int, int]], start: int, end: int) -> None:
    """Adds [start, end) to the sorted, disjoint ``ranges``, merging what touches it."""
    if start >= end:
        return
    index = bisect.bisect_left(ranges, (start, start))
    if index > 0 and ranges[index - 1][1] >= start:
        index -= 1
    last = index
    while last < len(ranges) and ranges[last][0] <= end:
        start = min(start, ranges[last][0])
        end = max(end, ranges[last][1])
        last += 1
    ranges[index:last] = [(start, end)]


def _split(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


class LazyModel:
    """The live and durable state of one mount, stored under ``state_dir``; see the module
    doc. Paths are absolute within the mount (``/raft/journal``). Errors are OSErrors with the
    errno a file system would give (ENOENT, EEXIST, ENOTEMPTY, ENOTDIR, EISDIR, EINVAL)."""

    def __init__(self, state_dir: str | os.PathLike[str],
                 source: str | os.PathLike[str] | None = None) -> None:
        self.state_dir = Path(state_dir)
        if self.state_dir.exists() and any(self.state_dir.iterdir()):
            raise ValueError(f"{self.state_dir} is not empty: a model starts in a fresh state dir")
        self._live_dir = self.state_dir / "live"
        self._data_dir = self.state_dir / "durable" / "data"
        self._dirs_dir = self.state_dir / "durable" / "dirs"
        for directory in (self._live_dir, self._data_dir, self._dirs_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self._inodes: dict[int, _Inode] = {}
        self._fds: dict[int, int] = {}
        self._handles: dict[int, int] = {}
        self._next_handle = 1
        self._next_id = ROOT
        self._durable_listing: dict[int, dict[str, tuple[int, str, int]]] = {}
        self._durable_refs: dict[int, int] = {}
        self.fsyncs = 0
        self.fsyncdirs = 0
        self.bytes_synced = 0
        root = self._new_inode(is_dir=True, mode=stat.S_IFDIR | 0o755)
        root.nlink = 1
        if source is not None:
            self._load(Path(source), root)
        self._write_listing(root)

    # ------------------------------------------------------------------ set-up

    def _new_inode(self, *, is_dir: bool, mode: int) -> _Inode:
        now = time.time_ns()
        inode = _Inode(self._next_id, is_dir, mode, atime_ns=now, mtime_ns=now, ctime_ns=now)
        self._inodes[inode.id] = inode
        self._next_id += 1
        if not is_dir:
            self._fds[inode.id] = os.open(self._live_dir / str(inode.id),
                                          os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        return inode

    def _load(self, source: Path, directory: _Inode) -> None:
        """Copies ``source`` in as both live and durable (the tree at mount time)."""
        for entry in sorted(os.scandir(source), key=lambda e: e.name):
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                child = self._new_inode(is_dir=True, mode=info.st_mode)
                self._load(Path(entry.path), child)
                self._write_listing(child)
            elif stat.S_ISREG(info.st_mode):
                child = self._new_inode(is_dir=False, mode=info.st_mode)
                os.close(self._fds[child.id])
                shutil.copyfile(entry.path, self._live_dir / str(child.id))
                shutil.copyfile(entry.path, self._data_dir / str(child.id))
                self._fds[child.id] = os.open(self._live_dir / str(child.id), os.O_RDWR)
                child.size = child.durable_size = info.st_size
            else:
                raise ValueError(f"{entry.path}: only directories and regular files are "
                                 "supported")
            child.nlink += 1
            directory.children[entry.name] = child.id

    # ------------------------------------------------------------------ lookups

    def _lookup(self, path: str) -> _Inode:
        inode = self._inodes[ROOT]
        for part in _split(path):
            if not inode.is_dir:
                raise _error(errno.ENOTDIR, path)
            child = inode.children.get(part)
            if child is None:
                raise _error(errno.ENOENT, path)
            inode = self._inodes[child]
        return inode

    def _parent(self, path: str) -> tuple[_Inode, str]:
        parts = _split(path)
        if not parts:
            raise _error(errno.EINVAL, path)
        parent = self._lookup("/" + "/".join(parts[:-1]))
        if not parent.is_dir:
            raise _error(errno.ENOTDIR, path)
        return parent, parts[-1]

    def _file(self, handle: int) -> _Inode:
        try:
            return self._inodes[self._handles[handle]]
        except KeyError:
            raise _error(errno.EBADF) from None

    def _target(self, path: str | None, handle: int | None) -> _Inode:
        if handle is not None and handle in self._handles:
            return self._file(handle)
        if path is None:
            raise _error(errno.EBADF)
        return self._lookup(path)

    def getattr(self, path: str | None, handle: int | None = None) -> dict[str, int]:
        """stat(2)'s fields of ``path`` (or of the open ``handle``)."""
        inode = self._target(path, handle)
        nlink = inode.nlink
        if inode.is_dir:
            nlink = 2 + sum(1 for c in inode.children.values() if self._inodes[c].is_dir)
        return {
            "st_ino": inode.id, "st_mode": inode.mode, "st_nlink": nlink,
            "st_size": 4096 if inode.is_dir else inode.size,
            "st_uid": os.getuid(), "st_gid": os.getgid(),
            "st_blksize": 4096, "st_blocks": (inode.size + 511) // 512,
            "st_atime": inode.atime_ns, "st_mtime": inode.mtime_ns, "st_ctime": inode.ctime_ns,
        }

    def readdir(self, path: str) -> list[tuple[str, int, int]]:
        """``(name, inode id, mode)`` of each entry of the directory, sorted by name."""
        inode = self._lookup(path)
        if not inode.is_dir:
            raise _error(errno.ENOTDIR, path)
        return [(name, child, self._inodes[child].mode)
                for name, child in sorted(inode.children.items())]

    def exists(self, path: str) -> bool:
        try:
            self._lookup(path)
        except OSError:
            return False
        return True

    # ------------------------------------------------------------------ namespace

    def _link_name(self, parent: _Inode, name: str, inode: _Inode) -> None:
        parent.children[name] = inode.id
        inode.nlink += 1
        parent.mtime_ns = parent.ctime_ns = time.time_ns()

    def _drop_name(self, parent: _Inode, name: str) -> None:
        inode = self._inodes[parent.children.pop(name)]
        inode.nlink -= 1
        parent.mtime_ns = parent.ctime_ns = time.time_ns()
        self._maybe_forget(inode)

    def _maybe_forget(self, inode: _Inode) -> None:
        """Drops an inode that has no live name and no open handle (its durable data stays
        while a durable listing still names it)."""
        if inode.nlink > 0 or inode.opens > 0 or inode.id == ROOT:
            return
        del self._inodes[inode.id]
        fd = self._fds.pop(inode.id, None)
        if fd is not None:
            os.close(fd)
            (self._live_dir / str(inode.id)).unlink(missing_ok=True)
        self._collect(inode.id)

    def _collect(self, inode_id: int) -> None:
        if self._durable_refs.get(inode_id, 0) == 0 and inode_id not in self._inodes:
            (self._data_dir / str(inode_id)).unlink(missing_ok=True)

    def mkdir(self, path: str, mode: int = 0o755) -> None:
        parent, name = self._parent(path)
        if name in parent.children:
            raise _error(errno.EEXIST, path)
        inode = self._new_inode(is_dir=True, mode=stat.S_IFDIR | (mode & 0o7777))
        self._link_name(parent, name, inode)

    def rmdir(self, path: str) -> None:
        parent, name = self._parent(path)
        inode = self._lookup(path)
        if not inode.is_dir:
            raise _error(errno.ENOTDIR, path)
        if inode.children:
            raise _error(errno.ENOTEMPTY, path)
        self._drop_name(parent, name)

    def create(self, path: str, mode: int = 0o644) -> int:
        """Creates ``path`` (or opens the existing file) and returns an open handle."""
        parent, name = self._parent(path)
        existing = parent.children.get(name)
        if existing is not None:
            if self._inodes[existing].is_dir:
                raise _error(errno.EISDIR, path)
            return self.open(path)
        inode = self._new_inode(is_dir=False, mode=stat.S_IFREG | (mode & 0o7777))
        self._link_name(parent, name, inode)
        return self._open_inode(inode)

    def open(self, path: str, flags: int = os.O_RDWR) -> int:
        inode = self._lookup(path)
        if inode.is_dir:
            raise _error(errno.EISDIR, path)
        if flags & os.O_TRUNC and flags & os.O_ACCMODE != os.O_RDONLY:
            self._truncate(inode, 0)
        return self._open_inode(inode)

    def _open_inode(self, inode: _Inode) -> int:
        handle = self._next_handle
        self._next_handle += 1
        self._handles[handle] = inode.id
        inode.opens += 1
        return handle

    def release(self, handle: int) -> None:
        inode = self._file(handle)
        del self._handles[handle]
        inode.opens -= 1
        self._maybe_forget(inode)

    def unlink(self, path: str) -> None:
        parent, name = self._parent(path)
        inode = self._lookup(path)
        if inode.is_dir:
            raise _error(errno.EISDIR, path)
        self._drop_name(parent, name)

    def link(self, existing: str, new: str) -> None:
        """A hard link ``new`` to the file at ``existing``."""
        inode = self._lookup(existing)
        if inode.is_dir:
            raise _error(errno.EPERM, existing)
        parent, name = self._parent(new)
        if name in parent.children:
            raise _error(errno.EEXIST, new)
        self._link_name(parent, name, inode)
        inode.ctime_ns = time.time_ns()

    def rename(self, old: str, new: str) -> None:
        """Moves ``old`` to ``new``, replacing a file or an empty directory there."""
        old_parent, old_name = self._parent(old)
        inode = self._lookup(old)
        new_parent, new_name = self._parent(new)
        if inode.is_dir:
            ancestor = new_parent
            parents = self._parents()
            while True:  # a directory cannot move into itself
                if ancestor.id == inode.id:
                    raise _error(errno.EINVAL, new)
                if ancestor.id == ROOT:
                    break
                ancestor = self._inodes[parents[ancestor.id]]
        replaced = new_parent.children.get(new_name)
        if replaced == inode.id:
            return
        if replaced is not None:
            target = self._inodes[replaced]
            if target.is_dir and not inode.is_dir:
                raise _error(errno.EISDIR, new)
            if inode.is_dir and not target.is_dir:
                raise _error(errno.ENOTDIR, new)
            if target.is_dir and target.children:
                raise _error(errno.ENOTEMPTY, new)
            self._drop_name(new_parent, new_name)
        del old_parent.children[old_name]
        new_parent.children[new_name] = inode.id
        now = time.time_ns()
        old_parent.mtime_ns = old_parent.ctime_ns = new_parent.mtime_ns = now
        new_parent.ctime_ns = inode.ctime_ns = now

    def _parents(self) -> dict[int, int]:
        return {child: inode.id for inode in self._inodes.values() if inode.is_dir
                for child in inode.children.values() if self._inodes[child].is_dir}

    def chmod(self, path: str | None, mode: int, handle: int | None = None) -> None:
        inode = self._target(path, handle)
        inode.mode = (inode.mode & ~0o7777) | (mode & 0o7777)
        inode.ctime_ns = time.time_ns()

    def utimens(self, path: str | None, times: tuple[int, int] | None = None,
                handle: int | None = None) -> None:
        inode = self._target(path, handle)
        now = time.time_ns()
        inode.atime_ns, inode.mtime_ns = times if times is not None else (now, now)
        inode.ctime_ns = now

    # ------------------------------------------------------------------ data

    def read(self, handle: int, size: int, offset: int) -> bytes:
        inode = self._file(handle)
        return os.pread(self._fds[inode.id], max(0, min(size, inode.size - offset)), offset)

    def write(self, handle: int, data: bytes, offset: int) -> int:
        inode = self._file(handle)
        if offset > inode.size:  # a hole: zeros where the durable file may hold old bytes
            _add_range(inode.dirty, inode.size, min(offset, inode.durable_size))
        written = os.pwrite(self._fds[inode.id], data, offset)
        _add_range(inode.dirty, offset, offset + written)
        inode.size = max(inode.size, offset + written)
        inode.mtime_ns = inode.ctime_ns = time.time_ns()
        return written

    def truncate(self, path: str | None, length: int, handle: int | None = None) -> None:
        inode = self._target(path, handle)
        if inode.is_dir:
            raise _error(errno.EISDIR, path or "")
        if length < 0:
            raise _error(errno.EINVAL, path or "")
        self._truncate(inode, length)

    def _truncate(self, inode: _Inode, length: int) -> None:
        if length > inode.size:  # zeros where the durable file may still hold older bytes
            _add_range(inode.dirty, inode.size, min(length, inode.durable_size))
        os.ftruncate(self._fds[inode.id], length)
        inode.size = length
        inode.mtime_ns = inode.ctime_ns = time.time_ns()

    # ------------------------------------------------------------------ durability

    def fsync(self, path: str | None, handle: int | None = None) -> None:
        """fsync / fdatasync: the file's durable bytes and size become its live ones."""
        inode = self._target(path, handle)
        self.fsyncs += 1
        if inode.is_dir:
            self._write_listing(inode)
            return
        if not inode.dirty and inode.durable_size == inode.size:
            return
        live = self._fds[inode.id]
        durable = os.open(self._data_dir / str(inode.id), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            for start, end in inode.dirty:
                end = min(end, inode.size)
                while start < end:
                    chunk = os.pread(live, min(_COPY_CHUNK, end - start), start)
                    if not chunk:
                        break
                    os.pwrite(durable, chunk, start)
                    start += len(chunk)
                    self.bytes_synced += len(chunk)
            os.ftruncate(durable, inode.size)
        finally:
            os.close(durable)
        inode.dirty.clear()
        inode.durable_size = inode.size

    def fsyncdir(self, path: str) -> None:
        """fsync of a directory: its durable listing becomes its live one."""
        inode = self._lookup(path)
        if not inode.is_dir:
            raise _error(errno.ENOTDIR, path)
        self.fsyncdirs += 1
        self._write_listing(inode)

    def _write_listing(self, directory: _Inode) -> None:
        listing = {}
        for name, child_id in directory.children.items():
            child = self._inodes[child_id]
            listing[name] = (child_id, "d" if child.is_dir else "f", child.mode)
        target = self._dirs_dir / f"{directory.id}.json"
        temporary = target.with_name(target.name + ".tmp")
        temporary.write_text(json.dumps({n: list(v) for n, v in listing.items()}),
                             encoding="utf-8")
        os.replace(temporary, target)
        old = self._durable_listing.get(directory.id, {})
        self._durable_listing[directory.id] = listing
        for child_id, _kind, _mode in listing.values():
            self._durable_refs[child_id] = self._durable_refs.get(child_id, 0) + 1
        for child_id, _kind, _mode in old.values():
            self._durable_refs[child_id] -= 1
            self._collect(child_id)

    def close(self) -> None:
        """Closes the live files (the state dir stays as it is)."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


@dataclass(frozen=True)
class MaterializeReport:
    """What :func:`materialize` built: counts of directories, files and bytes."""

    directories: int
    files: int
    bytes: int


def materialize(state_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]
                ) -> MaterializeReport:
    """Builds under ``out_dir`` (created; must not exist or be empty) the tree a power cut
    leaves of the model stored in ``state_dir``: see the module doc. Reads only the durable
    state, so it may run after the daemon was killed at any point."""
    state = Path(state_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise ValueError(f"{out} is not empty")
    dirs_dir = state / "durable" / "dirs"
    data_dir = state / "durable" / "data"
    seen_dirs = {ROOT}
    seen_files: dict[int, Path] = {}
    counts = [1, 0, 0]
    pending: list[tuple[int, Path]] = [(ROOT, out)]
    while pending:
        directory_id, target = pending.pop()
        listing_path = dirs_dir / f"{directory_id}.json"
        try:
            listing = json.loads(listing_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            listing = {}  # durably named, never fsynced itself: empty
        for name in sorted(listing):
            child_id, kind, mode = listing[name]
            path = target / name
            if kind == "d":
                if child_id in seen_dirs:
                    continue
                seen_dirs.add(child_id)
                path.mkdir()
                os.chmod(path, mode & 0o7777)
                counts[0] += 1
                pending.append((child_id, path))
                continue
            if child_id in seen_files:
                os.link(seen_files[child_id], path)
                continue
            data = data_dir / str(child_id)
            if data.exists():
                shutil.copyfile(data, path)
                counts[2] += data.stat().st_size
            else:
                path.write_bytes(b"")  # named durably, data never fsynced
            os.chmod(path, mode & 0o7777)
            seen_files[child_id] = path
            counts[1] += 1
    return MaterializeReport(*counts)
