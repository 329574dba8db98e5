"""PowerSupply: controllers whose data dirs live on lazyfs, and power cuts that lose what a
real power cut would.

Each controller's ``data_dir`` of a :class:`~chunkraft.local.local_cluster.LocalCluster` (or
of its subclass ``NetnsCluster``) becomes the mountpoint of a lazyfs daemon of its own
(``chaos/lazyfs.py``) before the node starts: every write is visible at once, but only what
the controller made durable with its own fsync / fdatasync calls (file data) and directory
fsyncs (creates, renames, unlinks) survives a cut (``chaos/lazyfs_model.py`` states the model).

:meth:`PowerSupply.cut` cuts the power of some or all controllers, in this order:

1. SIGSTOP every target controller and wait until every one of its threads has stopped
   (``/proc/<pid>/task/*/stat``), so none acts on the dying file system (or answers a client)
   from here on; a thread inside a file-system call stops when that call returns, which the
   still-living daemon lets it do; what a node answered before was answered after its own
   fsyncs returned;
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
from chunkraft.chaos.netns import pid_alive
from chunkraft.local.local_cluster import LocalCluster

__all__ = [
    "OWNER_DIR",
    "CutReport",
    "LazyfsMount",
    "PowerSupply",
    "clean_leftovers",
    "is_mounted",
    "leftover_mounts",
]

OWNER_DIR = Path("/run/chunkraft-lazyfs")
MOUNT_TIMEOUT_SECONDS = 30.0
KILL_WAIT_SECONDS = 10.0
UMOUNT_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 5.0


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


def _running_threads(pid: int) -> int:
    """Threads of ``pid`` not (yet) stopped: neither ``T`` / ``t`` nor gone."""
    running = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{task}/stat").read_text(encoding="ascii")
        except OSError:
            continue
        state = text.rpartition(")")[2].split()[0]  # the name in (...) may hold spaces
        if state not in ("T", "t", "Z", "X"):
            running += 1
    return running


def _wait_stopped(pids: dict[int, int], timeout: float) -> dict[int, int]:
    """Waits until every thread of each process has stopped; node id -> threads still
    running at the timeout (none normally)."""
    deadline = time.monotonic() + timeout
    while True:
        running = {node: count for node, pid in pids.items()
                   if (count := _running_threads(pid))}
        if not running or time.monotonic() >= deadline:
            return running
        time.sleep(0.001)


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
        if owner < 0 or not pid_alive(owner):
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


class LazyfsMount:
    """One lazyfs daemon serving ``source`` on ``mountpoint``, with its state in
    ``state_dir`` (fresh) and its output appended to ``log_path``. :meth:`start` returns once
    the file system is mounted; :meth:`cut` kills the daemon (SIGKILL) and detaches the mount,
    leaving ``state_dir`` for :func:`~chunkraft.chaos.lazyfs_model.materialize`; :meth:`stop`
    asks it to unmount (SIGTERM) and waits. The daemon is recorded under :data:`OWNER_DIR`
    while it runs. Not thread-safe."""

    def __init__(self, mountpoint: str | os.PathLike[str], source: str | os.PathLike[str],
                 state_dir: str | os.PathLike[str], log_path: str | os.PathLike[str]) -> None:
        self.mountpoint = Path(mountpoint)
        self.source = Path(source)
        self.state_dir = Path(state_dir)
        self.log_path = Path(log_path)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def _record(self) -> Path | None:
        return None if self.process is None else OWNER_DIR / f"{self.process.pid}.json"

    def start(self, timeout: float = MOUNT_TIMEOUT_SECONDS) -> None:
        if is_mounted(self.mountpoint):
            raise RuntimeError(f"{self.mountpoint} is already a lazyfs mount")
        OWNER_DIR.mkdir(parents=True, exist_ok=True)
        mountpoint = os.path.realpath(self.mountpoint)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "chunkraft.chaos.lazyfs", str(self.source), mountpoint,
                 str(self.state_dir)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        record = self._record
        assert record is not None
        record.write_text(json.dumps({"owner": os.getpid(), "daemon": self.process.pid,
                                      "mountpoint": mountpoint}), encoding="utf-8")
        deadline = time.monotonic() + timeout
        while not is_mounted(self.mountpoint):
            if self.process.poll() is not None:
                raise RuntimeError(f"the lazyfs daemon for {self.mountpoint} exited with status "
                                   f"{self.process.returncode}; see {self.log_path}")
            if time.monotonic() >= deadline:
                raise TimeoutError(f"lazyfs did not mount on {self.mountpoint} within "
                                   f"{timeout} s; see {self.log_path}")
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL the daemon (the power cut itself) and wait for it."""
        self._signal(signal.SIGKILL)

    def cut(self) -> None:
        """:meth:`kill`, then detach the dead mount."""
        self.kill()
        _unmount(self.mountpoint)

    def stop(self) -> None:
        """SIGTERM (libfuse unmounts), SIGKILL after a grace period; then make sure the
        mount is gone."""
        self._signal(signal.SIGTERM)
        _unmount(self.mountpoint)

    def _signal(self, sig: signal.Signals) -> None:
        process = self.process
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
        record = self._record
        if record is not None:
            record.unlink(missing_ok=True)
        self.process = None


@dataclass
class _Node:
    """A powered controller: its data dir and the generations of its lazyfs state."""

    node_id: int
    data_dir: Path
    home: Path
    generation: int = 0
    mount: LazyfsMount | None = None

    @property
    def generation_dir(self) -> Path:
        return self.home / f"gen-{self.generation}"

    def new_mount(self) -> LazyfsMount:
        self.mount = LazyfsMount(self.data_dir, self.generation_dir / "source",
                                 self.generation_dir / "state", self.home / "lazyfs.log")
        return self.mount


@dataclass(frozen=True)
class CutReport:
    """One cut: the nodes it cut, how long the cut and the remount took, what survived on each
    node (directories, files, bytes), and the threads that had not stopped within
    ``STOP_TIMEOUT_SECONDS`` of the SIGSTOP (normally none)."""

    node_ids: tuple[int, ...]
    cut_seconds: float
    remount_seconds: float
    survived: dict[int, MaterializeReport] = field(default_factory=dict)
    not_stopped: dict[int, int] = field(default_factory=dict)


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
        self.nodes = {node_id: _Node(node_id, Path(cluster.nodes[node_id].data_dir),
                                     base / f"controller-{node_id}")
                      for node_id in targets}
        self.reports: list[CutReport] = []
        """One report per cut, in order."""

    def mount(self, node_id: int) -> LazyfsMount:
        """The current lazyfs mount under controller ``node_id``'s data dir."""
        mount = self.nodes[node_id].mount
        if mount is None:
            raise RuntimeError(f"controller {node_id} is not plugged in")
        return mount

    # ------------------------------------------------------------------ mounting

    def plug(self) -> None:
        """Mounts a lazyfs daemon on every data dir (call before the nodes start)."""
        clean_leftovers()
        try:
            for node in self.nodes.values():
                self._first_mount(node)
        except BaseException:
            self.unplug()
            raise

    def _first_mount(self, node: _Node) -> None:
        if is_mounted(node.data_dir):
            raise RuntimeError(f"{node.data_dir} is already a lazyfs mount")
        node.generation_dir.mkdir(parents=True, exist_ok=False)
        mount = node.new_mount()
        if node.data_dir.is_dir() and any(node.data_dir.iterdir()):
            os.rename(node.data_dir, mount.source)  # its tree: durable at mount
        else:
            mount.source.mkdir()
        node.data_dir.mkdir(parents=True, exist_ok=True)
        mount.start()

    # ------------------------------------------------------------------ the cut

    def cut(self, node_ids: Sequence[int] | None = None) -> None:
        """Cuts the power of ``node_ids`` (every powered node by default) at once; see the
        module doc for the order. The nodes stay stopped, on a fresh mount of what survived;
        ``cluster.start(node_id)`` brings them back. :attr:`reports` gets the cut's report."""
        targets = list(self.nodes) if node_ids is None else list(node_ids)
        started = time.monotonic()
        stopped: dict[int, int] = {}
        for node_id in targets:
            process = self.cluster.nodes[node_id].process
            if process is not None and process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGSTOP)
                    stopped[node_id] = process.pid
        not_stopped = _wait_stopped(stopped, STOP_TIMEOUT_SECONDS)
        for node_id in targets:
            self.mount(node_id).kill()
        for node_id in targets:
            self.cluster.kill(node_id)
        for node_id in targets:
            _unmount(self.nodes[node_id].data_dir)
        cut_seconds = time.monotonic() - started
        survived = {}
        for node_id in targets:
            node = self.nodes[node_id]
            previous = node.generation_dir
            node.generation += 1
            node.generation_dir.mkdir(parents=True)
            mount = node.new_mount()
            survived[node_id] = materialize(previous / "state", mount.source)
            shutil.rmtree(previous)
            mount.start()
        self.reports.append(CutReport(tuple(targets), cut_seconds,
                                      time.monotonic() - started - cut_seconds, survived,
                                      not_stopped))

    # ------------------------------------------------------------------ cleanup

    def unplug(self) -> None:
        """Stops any controller still running on a mount (SIGTERM, then SIGKILL), stops the
        daemons and unmounts every data dir. The data dirs are left empty."""
        running = [n for n in self.nodes if self.cluster.nodes[n].running]
        for node_id in running:
            with contextlib.suppress(Exception):
                self.cluster.stop(node_id, timeout=10.0)
        for node_id in running:
            with contextlib.suppress(Exception):
                self.cluster.kill(node_id)
        errors = []
        for node in self.nodes.values():
            if node.mount is None:
                continue
            try:
                node.mount.stop()
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
