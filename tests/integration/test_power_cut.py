"""Power cuts with a real lazyfs mount (FUSE) and real controller processes.

The file-system tests go through real system calls (write, fsync, fdatasync, rename, unlink,
mmap) on a mounted lazyfs and cut its power (SIGKILL of the daemon), then compare what
survived with the model. The cluster tests put three controllers' data dirs on lazyfs
(``PowerSupply``) and cut all three at once: right after their first start (the empty-journal
bug), and under write load (every acknowledged createTopics must be on every node after the
restart, with one image hash). Each cut also writes a canary file without fsync, which must be
lost: the harness must really lose unsynced bytes, or these tests prove nothing.

Needs root and /dev/fuse (asserted: the project's machines and CI have both).
"""

from __future__ import annotations

import hashlib
import mmap
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chunkraft.chaos.lazyfs_model import materialize
from chunkraft.chaos.power import LazyfsMount, PowerSupply, is_mounted, leftover_mounts
from chunkraft.chaos.power import clean_leftovers as clean_leftover_mounts
from chunkraft.local.local_cluster import LocalCluster
from tests.integration.conftest import BASE_PROPERTIES, READY_TIMEOUT, log_tail, stop_cluster
from tests.support.cluster_client import admin_client, wait_converged
from tests.support.power_load import WriteLoad, check_after_restart

# pysyncobj leaves files to the garbage collector in the nodes; nothing of it runs here, but
# the LocalCluster's log handles are closed late on failures.
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

CANARY = b"written without fsync\n"


@pytest.fixture(autouse=True)
def _root_and_fuse() -> None:
    """FUSE mounts need root and /dev/fuse here; the project's machines and CI have both,
    so a machine without them fails here, saying why, rather than skipping."""
    assert os.geteuid() == 0, "the power-cut tests mount FUSE file systems: they need root"
    assert Path("/dev/fuse").exists(), "the power-cut tests need /dev/fuse (FUSE)"


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[LazyfsMount]:
    source = tmp_path / "source"
    source.mkdir()
    (source / "initial").write_bytes(b"at mount")
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    lazyfs = LazyfsMount(mountpoint, source, tmp_path / "state", tmp_path / "lazyfs.log")
    lazyfs.start()
    try:
        yield lazyfs
    finally:
        lazyfs.stop()
        assert not is_mounted(mountpoint)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(path: Path, data: bytes, *, sync: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def _cut(mount: LazyfsMount, out: Path) -> dict[str, bytes | None]:
    mount.cut()
    assert not is_mounted(mount.mountpoint)
    materialize(mount.state_dir, out)
    return _tree(out)


# ------------------------------------------------------------------ the file system


def test_real_syscalls_keep_what_was_synced_and_lose_the_rest(mount: LazyfsMount,
                                                              tmp_path: Path) -> None:
    root = mount.mountpoint
    _write(root / "synced", b"durable", sync=True)
    _write(root / "named-only", b"data never synced", sync=False)
    _write(root / "renamed-away", b"keeps its old name", sync=True)
    _write(root / "unlinked", b"comes back", sync=True)
    (root / "raft").mkdir()
    _fsync_dir(root)
    _write(root / "raft" / "journal", b"the directory was never synced", sync=True)
    _write(root / "data-only", b"its name was never synced", sync=True)
    (root / "renamed-away").rename(root / "new-name")
    (root / "unlinked").unlink()
    with (root / "synced").open("r+b") as file:
        file.write(b"DUR")  # after its fsync
    os.truncate(root / "initial", 2)  # never synced
    # The live view shows all of it at once.
    assert (root / "synced").read_bytes() == b"DURable"
    assert sorted(os.listdir(root)) == ["data-only", "initial", "named-only", "new-name", "raft",
                                        "synced"]

    assert _cut(mount, tmp_path / "after") == {
        "initial": b"at mount",
        "named-only": b"",
        "raft": None,
        "renamed-away": b"keeps its old name",
        "synced": b"durable",
        "unlinked": b"comes back",
    }


def test_mmap_writes_survive_up_to_the_last_fdatasync(mount: LazyfsMount,
                                                      tmp_path: Path) -> None:
    """pysyncobj's journal: grown with ftruncate, written through a shared mmap, fdatasynced."""
    path = mount.mountpoint / "journal"
    _write(path, b"H" * 40, sync=True)
    _fsync_dir(mount.mountpoint)
    fd = os.open(path, os.O_RDWR)
    try:
        os.ftruncate(fd, 3 * mmap.PAGESIZE)
        mapping = mmap.mmap(fd, 3 * mmap.PAGESIZE)
        mapping[40:100] = b"A" * 60
        mapping[mmap.PAGESIZE:mmap.PAGESIZE + 10] = b"B" * 10
        reader = os.open(path, os.O_RDONLY)  # as DurableJournal syncs: another descriptor
        os.fdatasync(reader)
        os.close(reader)
        # Never synced (no msync either: MS_SYNC is an fsync of the range), only unmapped,
        # which writes the dirty page back to the daemon's live view.
        mapping[2 * mmap.PAGESIZE:2 * mmap.PAGESIZE + 10] = b"C" * 10
        assert path.read_bytes()[2 * mmap.PAGESIZE:2 * mmap.PAGESIZE + 10] == b"C" * 10
        mapping.close()
    finally:
        os.close(fd)
    expected = bytearray(3 * mmap.PAGESIZE)
    expected[:40] = b"H" * 40
    expected[40:100] = b"A" * 60
    expected[mmap.PAGESIZE:mmap.PAGESIZE + 10] = b"B" * 10
    assert _cut(mount, tmp_path / "after")["journal"] == bytes(expected)


def test_a_replace_by_rename_is_durable_only_with_its_directory_fsync(
        mount: LazyfsMount, tmp_path: Path) -> None:
    """term_vote.py's pattern: temp file, fsync, rename over the old file, directory fsync;
    and the dump's placeholder: a hard link renamed onto its own inode."""
    root = mount.mountpoint
    _write(root / "journal.term", b"term 1", sync=True)
    _fsync_dir(root)
    _write(root / "journal.term.tmp", b"term 2", sync=True)
    os.replace(root / "journal.term.tmp", root / "journal.term")
    _write(root / "other.tmp", b"not yet", sync=True)
    os.replace(root / "other.tmp", root / "other")
    os.link(root / "journal.term", root / "placeholder")
    os.replace(root / "placeholder", root / "journal.term")  # same inode: a no-op
    assert sorted(os.listdir(root)) == ["initial", "journal.term", "other", "placeholder"]
    (root / "placeholder").unlink()
    _fsync_dir(root)
    _write(root / "journal.term.tmp", b"term 3", sync=True)
    os.replace(root / "journal.term.tmp", root / "journal.term")  # no directory fsync
    assert _cut(mount, tmp_path / "after") == {"initial": b"at mount", "journal.term": b"term 2",
                                               "other": b"not yet"}


def test_big_writes_are_served_and_synced_whole(mount: LazyfsMount, tmp_path: Path) -> None:
    data = os.urandom(1 << 20) * 16  # 16 MiB
    started = time.monotonic()
    _write(mount.mountpoint / "big", data, sync=True)
    _fsync_dir(mount.mountpoint)
    seconds = time.monotonic() - started
    assert seconds < 60, f"16 MiB took {seconds:.1f} s to write and sync"
    after = _cut(mount, tmp_path / "after")
    assert hashlib.sha256(after["big"] or b"").digest() == hashlib.sha256(data).digest()


def test_a_killed_harness_leaves_a_mount_the_next_one_cleans(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from chunkraft.chaos.power import LazyfsMount
        base = Path({str(tmp_path)!r})
        (base / "source").mkdir(); (base / "mnt").mkdir()
        LazyfsMount(base / "mnt", base / "source", base / "state", base / "log").start()
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    harness = subprocess.run([sys.executable, "-c", script], timeout=60, check=False)
    assert harness.returncode == -9
    mountpoint = tmp_path / "mnt"
    assert is_mounted(mountpoint)
    assert str(mountpoint) in {str(entry.get("mountpoint")) for entry in leftover_mounts()}
    assert clean_leftover_mounts() >= 1
    assert not is_mounted(mountpoint)
    assert str(mountpoint) not in {str(entry.get("mountpoint")) for entry in leftover_mounts()}


# ------------------------------------------------------------------ controllers


@pytest.fixture
def powered(tmp_path: Path, request: pytest.FixtureRequest
            ) -> Iterator[tuple[LocalCluster, PowerSupply]]:
    """Three controllers whose data dirs are lazyfs mounts, formatted through lazyfs and
    started; compaction every 100 entries, so cuts also meet dumps."""
    cluster = LocalCluster(tmp_path / "cluster", extra_properties={
        **BASE_PROPERTIES, "raft.log.compaction.min.entries": "100"})
    power = PowerSupply(cluster)
    power.plug()
    try:
        cluster.prepare()
        cluster.start()
        yield cluster, power
    finally:
        report = getattr(request.node, "report_call", None)
        if report is None or report.failed:
            for node in cluster.nodes.values():
                print(f"---- controller {node.node_id} ({node.log_path}):\n"
                      f"{log_tail(node.log_path)}")
        try:
            stop_cluster(cluster)
        finally:
            power.unplug()


def _write_canaries(cluster: LocalCluster) -> list[Path]:
    paths = [node.data_dir / "canary" for node in cluster.nodes.values()]
    for path in paths:
        path.write_bytes(CANARY)
    return paths


def _restart_all(cluster: LocalCluster) -> None:
    cluster.start()
    cluster.wait_ready(timeout=READY_TIMEOUT)
    wait_converged(cluster, list(cluster.nodes), timeout=READY_TIMEOUT)
    stopped = [n for n, node in cluster.nodes.items() if not node.running]
    assert not stopped, f"controllers {stopped} did not come back after the cut"


def test_a_cut_right_after_the_first_start_leaves_nodes_that_start_again(
        powered: tuple[LocalCluster, PowerSupply]) -> None:
    """The power-cut harness found this: the journal's name was durable (the term/vote store
    fsyncs raft/) before its bytes, so a cut before the first entry's sync left an empty
    journal that every node refused at start."""
    cluster, power = powered
    terms = [node.data_dir / "raft" / "journal.term" for node in cluster.nodes.values()]
    deadline = time.monotonic() + READY_TIMEOUT
    while not all(path.exists() for path in terms) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert all(path.exists() for path in terms), "the nodes never stored a term"
    power.cut()
    journals = [power.mount(n).source / "raft" / "journal" for n in cluster.nodes]
    assert all(path.exists() and path.stat().st_size >= 40 for path in journals), \
        [(str(path), path.stat().st_size if path.exists() else None) for path in journals]
    _restart_all(cluster)


def test_acknowledged_topics_survive_cuts_of_all_three_under_load(
        powered: tuple[LocalCluster, PowerSupply]) -> None:
    cluster, power = powered
    cluster.wait_ready(timeout=READY_TIMEOUT)
    with admin_client(cluster, deadline=READY_TIMEOUT) as client:
        client.ensure_unfenced([1], cluster.cluster_id)
    acknowledged: set[str] = set()
    for cut in range(3):
        load = WriteLoad(cluster, f"power-{cut}", writers=4)
        load.start()
        time.sleep(1.0 + cut)
        canaries = _write_canaries(cluster)
        power.cut()
        result = load.stop()
        assert not result.refused, result.refused
        assert len(result.acknowledged) >= 10, "too few writes to say anything"
        acknowledged |= result.acknowledged
        assert not [p for p in canaries if p.exists() and p.stat().st_size], \
            "a file written without fsync survived the cut: the harness loses nothing"
        _restart_all(cluster)
        after = check_after_restart(cluster, f"power-{cut}", result, timeout=READY_TIMEOUT)
        assert after.ok, after
    with admin_client(cluster, deadline=READY_TIMEOUT) as client:
        names = {t["name"] for t in client.metadata()["topics"]}
    assert acknowledged <= names
    dumps = [node.data_dir / "raft" / "dump" for node in cluster.nodes.values()]
    assert any(path.exists() for path in dumps), "no dump: the cuts never met a compaction"
    assert len(power.reports) == 3
