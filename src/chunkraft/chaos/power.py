"""PowerSupply: controllers whose data dirs live on lazyfs, and power cuts that lose what a
real power cut would.

Each controller's ``data_dir`` of a :class:`~chunkraft.deploy.local_cluster.LocalCluster` (or
of its subclass ``NetnsCluster``) becomes the mountpoint of a lazyfs daemon of its own
(``chaos/lazyfs.py``) before the node starts: every write is visible at once, but only what
the controller made durable with its own fsync / fdatasync calls (file data) and directory
fsyncs (creates, renames, unlinks) survives a cut (``chaos/lazyfs_model.py`` states the model).

:meth:`PowerSupply.cut` cuts the power of some or all controllers, in this order:

1. SIGSTOP every target controller, so none acts on the dying file system (or answers a
   client) from here on; what it answered before was answered after its own fsyncs returned;
2. SIGKILL their lazyfs daemons: the kernel's FUSE connection is aborted, and whatever the
   kernel or the daemon held that no fsync had made durable is gone;
3. SIGKILL the controllers (``LocalCluster.kill``);
4. detach the dead mounts (``umount -l``);
5. build the surviving tree (``materialize``) and mount a fresh daemon on it, so
   ``cluster.start(node_id)`` brings the node back on exactly what survived.

Usage (as root: mounting FUSE needs it here)::

    cluster = LocalCluster(base_dir)
    with PowerSupply(cluster) as power:    # mounts lazyfs on every data dir
        with cluster:                      # formats through lazyfs, starts the nodes
            ...
            power.cut()                    # all three at once
            cluster.start()

A data dir that already holds files (formatted before ``plug``) is moved aside and becomes the
first mount's initial tree, which is durable. Generations of state live under ``work_dir``
(``<base_dir>/power`` by default): ``controller-<id>/gen-<k>/{source,state}`` and the daemon's
log ``controller-<id>/lazyfs.log``; older generations are removed after each cut.

Cleanup: :meth:`unplug` (and leaving the ``with`` block, also on an exception) stops any
controller still running (SIGTERM, then SIGKILL), stops the daemons and unmounts. Each daemon
is recorded in ``/run/chunkraft-lazyfs/<daemon pid>.json`` with the PID of the harness that
owns it; a harness killed with SIGKILL leaves mounts behind, and the next ``plug`` kills the
daemons of dead owners (checking the PID is still a lazyfs daemon) and unmounts their
mountpoints. Not thread-safe.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from chunkraft.chaos.lazyfs import FSNAME
from chunkraft.chaos.lazyfs_model import MaterializeReport, materialize
from chunkraft.deploy.local_cluster import LocalCluster

__all__ = ["OWNER_DIR", "CutReport", "PowerSupply", "is_mounted", "leftover_mounts"]

OWNER_DIR = Path("/run/chunkraft-lazyfs")
MOUNT_TIMEOUT_SECONDS = 30.0
KILL_WAIT_SECONDS = 10.0
UMOUNT_TIMEOUT_SECONDS = 30.0


def _unescape(field_text: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (``\\040``)."""
    for code in ("040", "011", "012", "134"):
        field_text = field_text.replace("\\" + code, chr(int(code, 8)))
    return field_text


def _lazyfs_mountpoints() -> set[str]:
    """Every mountpoint of a lazyfs file system in this mount namespace."""
    found = set()
    with open("/proc/self/mountinfo", encoding="utf-8") as mountinfo:
        for line in mountinfo:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(fields) >= 5 and len(tail) >= 2 and tail[1] == FSNAME:
                found.add(_unescape(fields[4]))
    return found


def is_mounted(mountpoint: str | os.PathLike[str]) -> bool:
    """True if a lazyfs file system is mounted on ``mountpoint``."""
    return os.path.realpath(mountpoint) in _lazyfs_mountpoints()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_lazyfs_daemon(pid: int, mountpoint: str) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"chunkraft.chaos.lazyfs" in argv and mountpoint.encode() in argv


def _unmount(mountpoint: Path) -> None:
    """Detaches the lazyfs mount on ``mountpoint`` (lazily: a dead daemon's mount is busy)."""
    for _ in range(3):
        if not is_mounted(mountpoint):
            return
        argv = (["umount", "-l", str(mountpoint)] if os.geteuid() == 0
                else ["fusermount", "-u", "-z", str(mountpoint)])
        result = subprocess.run(argv, capture_output=True, text=True, check=False,
                                timeout=UMOUNT_TIMEOUT_SECONDS)
        if result.returncode != 0 and is_mounted(mountpoint):
            time.sleep(0.1)
    if is_mounted(mountpoint):
        raise RuntimeError(f"cannot unmount the lazyfs mount on {mountpoint}")


def leftover_mounts() -> list[dict[str, object]]:
    """The recorded daemons whose owning harness is gone (their mounts may still exist)."""
    found = []
    for record in sorted(OWNER_DIR.glob("*.json")) if OWNER_DIR.is_dir() else []:
        try:
            entry = json.loads(record.read_text(encoding="utf-8"))
            owner = int(entry["owner"])
        except (OSError, ValueError, KeyError, TypeError):
            entry, owner = {}, -1
        if owner < 0 or not _pid_alive(owner):
            found.append({**entry, "record": str(record)})
    return found


def clean_leftovers() -> int:
    """Kills the daemons of dead harnesses and detaches their mounts; how many it cleaned."""
    cleaned = 0
    for entry in leftover_mounts():
        mountpoint = str(entry.get("mountpoint", ""))
        daemon = entry.get("daemon")
        if isinstance(daemon, int) and mountpoint and _is_lazyfs_daemon(daemon, mountpoint):
            with contextlib.suppress(ProcessLookupError):
                os.kill(daemon, signal.SIGKILL)
        if mountpoint:
            with contextlib.suppress(RuntimeError, OSError, subprocess.SubprocessError):
                _unmount(Path(mountpoint))
        with contextlib.suppress(FileNotFoundError):
            Path(str(entry["record"])).unlink()
        cleaned += 1
    return cleaned


@dataclass
class _Mount:
    """One controller's lazyfs mount (the current generation)."""

    node_id: int
    mountpoint: Path
    home: Path
    generation: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def generation_dir(self) -> Path:
        return self.home / f"gen-{self.generation}"

    @property
    def source_dir(self) -> Path:
        return self.generation_dir / "source"

    @property
    def state_dir(self) -> Path:
        return self.generation_dir / "state"

    @property
    def log_path(self) -> Path:
        return self.home / "lazyfs.log"

    @property
    def record_path(self) -> Path | None:
        return None if self.process is None else OWNER_DIR / f"{self.process.pid}.json"


@dataclass(frozen=True)
class CutReport:
    """One cut: the nodes it cut, how long the cut and the remount took, and what survived
    on each node (directories, files, bytes)."""

    node_ids: tuple[int, ...]
    cut_seconds: float
    remount_seconds: float
    survived: dict[int, MaterializeReport] = field(default_factory=dict)


class PowerSupply:
    """Lazyfs mounts under the controllers of ``cluster``, and power cuts; see the module doc.

    ``work_dir``: where the generations of state live (``<base_dir>/power`` by default);
    ``node_ids``: the controllers to power (every node by default). Not thread-safe.
    """

    def __init__(self, cluster: LocalCluster, work_dir: str | os.PathLike[str] | None = None,
                 *, node_ids: Sequence[int] | None = None) -> None:
        self.cluster = cluster
        base = Path(work_dir) if work_dir is not None else Path(cluster.base_dir) / "power"
        targets = list(cluster.nodes) if node_ids is None else list(node_ids)
        self.mounts = {node_id: _Mount(node_id, Path(cluster.nodes[node_id].data_dir),
                                       base / f"controller-{node_id}")
                       for node_id in targets}
        self.reports: list[CutReport] = []
        """One report per cut, in order."""

    # ------------------------------------------------------------------ mounting

    def plug(self) -> None:
        """Mounts a lazyfs daemon on every data dir (call before the nodes start)."""
        clean_leftovers()
        try:
            for mount in self.mounts.values():
                self._first_mount(mount)
        except BaseException:
            self.unplug()
            raise

    def _first_mount(self, mount: _Mount) -> None:
        if is_mounted(mount.mountpoint):
            raise RuntimeError(f"{mount.mountpoint} is already a lazyfs mount")
        mount.home.mkdir(parents=True, exist_ok=True)
        mount.generation_dir.mkdir(parents=True, exist_ok=False)
        if mount.mountpoint.is_dir() and any(mount.mountpoint.iterdir()):
            os.rename(mount.mountpoint, mount.source_dir)  # its tree: durable at mount
        else:
            mount.source_dir.mkdir()
        mount.mountpoint.mkdir(parents=True, exist_ok=True)
        self._mount(mount)

    def _mount(self, mount: _Mount) -> None:
        OWNER_DIR.mkdir(parents=True, exist_ok=True)
        with mount.log_path.open("ab") as log:
            mount.process = subprocess.Popen(
                [sys.executable, "-m", "chunkraft.chaos.lazyfs", str(mount.source_dir),
                 os.path.realpath(mount.mountpoint), str(mount.state_dir)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        record = mount.record_path
        assert record is not None
        record.write_text(json.dumps({"owner": os.getpid(), "daemon": mount.process.pid,
                                      "mountpoint": os.path.realpath(mount.mountpoint)}),
                          encoding="utf-8")
        deadline = time.monotonic() + MOUNT_TIMEOUT_SECONDS
        while not is_mounted(mount.mountpoint):
            if mount.process.poll() is not None:
                raise RuntimeError(f"the lazyfs daemon of controller {mount.node_id} exited "
                                   f"with status {mount.process.returncode}; see "
                                   f"{mount.log_path}")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"lazyfs did not mount on {mount.mountpoint} within "
                                   f"{MOUNT_TIMEOUT_SECONDS} s; see {mount.log_path}")
            time.sleep(0.02)

    def _kill_daemon(self, mount: _Mount, sig: signal.Signals) -> None:
        process = mount.process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, sig)
            try:
                process.wait(KILL_WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                process.wait(KILL_WAIT_SECONDS)
        record = mount.record_path
        if record is not None:
            record.unlink(missing_ok=True)
        mount.process = None

    # ------------------------------------------------------------------ the cut

    def cut(self, node_ids: Sequence[int] | None = None) -> None:
        """Cuts the power of ``node_ids`` (every powered node by default) at once; see the
        module doc for the order. The nodes stay stopped, on a fresh mount of what survived;
        ``cluster.start(node_id)`` brings them back. :attr:`reports` gets the cut's report."""
        targets = list(self.mounts) if node_ids is None else list(node_ids)
        started = time.monotonic()
        for node_id in targets:
            process = self.cluster.nodes[node_id].process
            if process is not None and process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGSTOP)
        for node_id in targets:
            self._kill_daemon(self.mounts[node_id], signal.SIGKILL)
        for node_id in targets:
            self.cluster.kill(node_id)
        for node_id in targets:
            _unmount(self.mounts[node_id].mountpoint)
        cut_seconds = time.monotonic() - started
        survived = {}
        for node_id in targets:
            mount = self.mounts[node_id]
            previous = mount.generation_dir
            mount.generation += 1
            mount.generation_dir.mkdir(parents=True)
            survived[node_id] = materialize(previous / "state", mount.source_dir)
            shutil.rmtree(previous)
            self._mount(mount)
        self.reports.append(CutReport(tuple(targets), cut_seconds,
                                      time.monotonic() - started - cut_seconds, survived))

    # ------------------------------------------------------------------ cleanup

    def unplug(self) -> None:
        """Stops any controller still running on a mount (SIGTERM, then SIGKILL), stops the
        daemons and unmounts every data dir. The data dirs are left empty."""
        running = [n for n in self.mounts if self.cluster.nodes[n].running]
        if running:
            for node_id in running:
                with contextlib.suppress(Exception):
                    self.cluster.stop(node_id, timeout=10.0)
            for node_id in running:
                with contextlib.suppress(Exception):
                    self.cluster.kill(node_id)
        errors = []
        for mount in self.mounts.values():
            self._kill_daemon(mount, signal.SIGTERM)
            try:
                _unmount(mount.mountpoint)
            except (RuntimeError, OSError, subprocess.SubprocessError) as error:
                errors.append(str(error))
        if errors:
            raise RuntimeError("; ".join(errors))

    def __enter__(self) -> PowerSupply:
        self.plug()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.unplug()
