"""LazyModel and materialize: sequences of operations -> what a power cut leaves."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chunkraft.chaos.lazyfs_model import LazyModel, _add_range, materialize


@pytest.fixture
def model(tmp_path: Path) -> LazyModel:
    return LazyModel(tmp_path / "state")


def cut(model: LazyModel, tmp_path: Path, name: str = "after") -> Path:
    """What a power cut at this point leaves (the model is not used afterwards)."""
    out = tmp_path / name
    materialize(model.state_dir, out)
    return out


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` -> its bytes (None for a directory)."""
    found: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        found[str(path.relative_to(root))] = None if path.is_dir() else path.read_bytes()
    return found


def write_file(model: LazyModel, path: str, data: bytes, *, sync: bool) -> None:
    handle = model.create(path)
    model.write(handle, data, 0)
    if sync:
        model.fsync(None, handle)
    model.release(handle)


# ------------------------------------------------------------------ file data


def test_fsynced_data_survives_and_unsynced_data_is_lost(model: LazyModel,
                                                         tmp_path: Path) -> None:
    write_file(model, "/synced", b"durable", sync=True)
    write_file(model, "/unsynced", b"lost", sync=False)
    model.fsyncdir("/")
    handle = model.open("/synced")
    model.write(handle, b"DUR", 0)  # after the fsync: lost
    model.release(handle)

    assert tree(cut(model, tmp_path)) == {"synced": b"durable", "unsynced": b""}


def test_a_file_whose_name_was_never_synced_is_gone_whatever_its_data(
        model: LazyModel, tmp_path: Path) -> None:
    write_file(model, "/data-synced-name-not", b"x" * 100, sync=True)
    assert tree(cut(model, tmp_path)) == {}


def test_the_initial_tree_is_durable_with_its_modes(tmp_path: Path) -> None:
    source = tmp_path / "source"
    (source / "raft").mkdir(parents=True)
    (source / "meta.properties").write_bytes(b"node.id=1\n")
    (source / "raft" / "journal").write_bytes(b"J" * 5000)
    os.chmod(source / "meta.properties", 0o600)
    model = LazyModel(tmp_path / "state", source)
    handle = model.open("/raft/journal")
    model.write(handle, b"unsynced", 0)
    model.release(handle)

    after = cut(model, tmp_path)
    assert tree(after) == {"meta.properties": b"node.id=1\n", "raft": None,
                           "raft/journal": b"J" * 5000}
    assert stat.S_IMODE((after / "meta.properties").stat().st_mode) == 0o600


def test_the_live_view_shows_everything_at_once(model: LazyModel) -> None:
    write_file(model, "/a", b"hello", sync=False)
    handle = model.open("/a")
    assert model.read(handle, 100, 0) == b"hello"
    assert model.getattr("/a")["st_size"] == 5
    model.release(handle)
    model.mkdir("/d")
    assert [entry[0] for entry in model.readdir("/")] == ["a", "d"]


# ------------------------------------------------------------------ directories


def test_a_rename_without_a_directory_fsync_reverts(model: LazyModel, tmp_path: Path) -> None:
    write_file(model, "/dump", b"old dump", sync=True)
    write_file(model, "/dump.next", b"new dump", sync=True)
    model.fsyncdir("/")
    model.rename("/dump.next", "/dump")
    assert tree(cut(model, tmp_path, "before-sync")) == {"dump": b"old dump",
                                                         "dump.next": b"new dump"}
    model.fsyncdir("/")
    assert tree(cut(model, tmp_path, "after-sync")) == {"dump": b"new dump"}


def test_an_unlink_without_a_directory_fsync_comes_back(model: LazyModel,
                                                        tmp_path: Path) -> None:
    write_file(model, "/f", b"content", sync=True)
    model.fsyncdir("/")
    model.unlink("/f")
    assert not model.exists("/f")
    assert tree(cut(model, tmp_path, "unsynced")) == {"f": b"content"}
    model.fsyncdir("/")
    assert tree(cut(model, tmp_path, "synced")) == {}


def test_a_new_directory_is_durable_in_its_parent_and_its_entries_in_itself(
        model: LazyModel, tmp_path: Path) -> None:
    model.mkdir("/raft")
    write_file(model, "/raft/journal", b"j", sync=True)
    assert tree(cut(model, tmp_path, "nothing-synced")) == {}
    model.fsyncdir("/")
    assert tree(cut(model, tmp_path, "parent-synced")) == {"raft": None}
    model.fsyncdir("/raft")
    assert tree(cut(model, tmp_path, "both")) == {"raft": None, "raft/journal": b"j"}
    model.unlink("/raft/journal")
    model.rmdir("/raft")
    assert tree(cut(model, tmp_path, "removed-unsynced")) == {"raft": None,
                                                              "raft/journal": b"j"}


def test_a_rename_across_directories_is_two_changes(model: LazyModel, tmp_path: Path) -> None:
    model.mkdir("/a")
    model.mkdir("/b")
    write_file(model, "/a/f", b"f", sync=True)
    for directory in ("/", "/a", "/b"):
        model.fsyncdir(directory)
    model.rename("/a/f", "/b/f")
    model.fsyncdir("/b")  # the new name only: the file has both names
    assert tree(cut(model, tmp_path, "target")) == {"a": None, "a/f": b"f", "b": None,
                                                    "b/f": b"f"}
    after = tmp_path / "target"
    assert (after / "a" / "f").stat().st_ino == (after / "b" / "f").stat().st_ino
    model.fsyncdir("/a")
    assert tree(cut(model, tmp_path, "both")) == {"a": None, "b": None, "b/f": b"f"}


def test_a_hard_link_renamed_onto_its_own_inode_changes_nothing(
        model: LazyModel, tmp_path: Path) -> None:
    """The dump placeholder: a link to the dump, renamed over the dump (POSIX: a no-op)."""
    write_file(model, "/dump", b"dump", sync=True)
    model.fsyncdir("/")
    model.link("/dump", "/dump.tmp")
    model.rename("/dump.tmp", "/dump")
    assert sorted(entry[0] for entry in model.readdir("/")) == ["dump", "dump.tmp"]
    assert model.getattr("/dump")["st_nlink"] == 2
    model.fsyncdir("/")
    after = cut(model, tmp_path)
    assert tree(after) == {"dump": b"dump", "dump.tmp": b"dump"}
    assert (after / "dump").stat().st_ino == (after / "dump.tmp").stat().st_ino


def test_an_unlinked_open_file_lives_until_released_and_then_its_data_is_dropped(
        model: LazyModel, tmp_path: Path) -> None:
    write_file(model, "/f", b"one", sync=True)
    model.fsyncdir("/")
    handle = model.open("/f")
    model.unlink("/f")
    model.write(handle, b"two", 0)
    model.fsync(None, handle)
    assert model.read(handle, 10, 0) == b"two"
    model.release(handle)
    assert tree(cut(model, tmp_path, "name-still-durable")) == {"f": b"two"}
    model.fsyncdir("/")
    assert tree(cut(model, tmp_path, "gone")) == {}
    assert list((model.state_dir / "durable" / "data").iterdir()) == []
    assert list((model.state_dir / "live").iterdir()) == []


def test_errors_are_those_of_a_file_system(model: LazyModel) -> None:
    model.mkdir("/d")
    write_file(model, "/d/f", b"", sync=False)
    cases: list[tuple[Callable[[], object], int]] = [
        (lambda: model.getattr("/missing"), errno.ENOENT),
        (lambda: model.mkdir("/d"), errno.EEXIST),
        (lambda: model.rmdir("/d"), errno.ENOTEMPTY),
        (lambda: model.unlink("/d"), errno.EISDIR),
        (lambda: model.getattr("/d/f/x"), errno.ENOTDIR),
        (lambda: model.rename("/d", "/d/inner"), errno.EINVAL),
        (lambda: model.link("/d/f", "/d/f"), errno.EEXIST),
    ]
    for call, code in cases:
        with pytest.raises(OSError) as raised:
            call()
        assert raised.value.errno == code


# ------------------------------------------------------------------ sizes, holes and pages


def test_truncation_is_durable_only_through_fsync(model: LazyModel, tmp_path: Path) -> None:
    write_file(model, "/f", b"0123456789", sync=True)
    model.fsyncdir("/")
    model.truncate("/f", 4)
    assert tree(cut(model, tmp_path, "shrunk-unsynced")) == {"f": b"0123456789"}
    model.truncate("/f", 8)  # grows again: the bytes 4..8 are zeros now
    model.fsync("/f")
    assert tree(cut(model, tmp_path, "regrown")) == {"f": b"0123\0\0\0\0"}


def test_a_hole_over_old_durable_bytes_reads_as_zeros_after_fsync(
        model: LazyModel, tmp_path: Path) -> None:
    write_file(model, "/f", b"abcdefghij", sync=True)
    model.fsyncdir("/")
    handle = model.open("/f")
    model.truncate(None, 2, handle)
    model.write(handle, b"Z", 6)  # a hole at 2..6, where the durable file held cdef
    model.fsync(None, handle)
    model.release(handle)
    assert tree(cut(model, tmp_path)) == {"f": b"ab\0\0\0\0Z"}


def test_mmap_like_page_writes_survive_up_to_the_last_fdatasync(
        model: LazyModel, tmp_path: Path) -> None:
    """pysyncobj's journal: ftruncate to grow, dirty pages written back out of order, then an
    fdatasync; a later page that was written back but not synced is lost."""
    write_file(model, "/journal", b"H" * 40, sync=True)
    model.fsyncdir("/")
    handle = model.open("/journal")
    model.truncate(None, 16384, handle)
    page = 4096
    model.write(handle, b"B" * page, page)
    model.write(handle, b"A" * (page - 40), 40)
    model.fsync(None, handle)  # fdatasync
    model.write(handle, b"C" * page, 2 * page)  # written back, never synced
    model.release(handle)
    expected = b"H" * 40 + b"A" * (page - 40) + b"B" * page + b"\0" * (2 * page)
    assert tree(cut(model, tmp_path)) == {"journal": expected}


def test_add_range_keeps_ranges_sorted_disjoint_and_merged() -> None:
    ranges: list[tuple[int, int]] = []
    for start, end in [(10, 20), (30, 40), (20, 25), (0, 5), (5, 10), (35, 50), (60, 60)]:
        _add_range(ranges, start, end)
    assert ranges == [(0, 25), (30, 50)]


_operations = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, 300), st.binary(min_size=1, max_size=80)),
        st.tuples(st.just("truncate"), st.integers(0, 300), st.just(b"")),
        st.tuples(st.just("fsync"), st.just(0), st.just(b"")),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(initial=st.binary(max_size=200), operations=_operations)
def test_the_durable_bytes_are_the_live_bytes_of_the_last_fsync(
        tmp_path_factory: pytest.TempPathFactory, initial: bytes,
        operations: list[tuple[str, int, bytes]]) -> None:
    """Against a reference that copies the whole file at every fsync."""
    base = tmp_path_factory.mktemp("model")
    source = base / "source"
    source.mkdir()
    (source / "f").write_bytes(initial)
    model = LazyModel(base / "state", source)
    live, durable = bytearray(initial), bytes(initial)
    handle = model.open("/f")
    for name, number, data in operations:
        if name == "write":
            if number > len(live):
                live.extend(b"\0" * (number - len(live)))
            live[number:number + len(data)] = data
            model.write(handle, data, number)
        elif name == "truncate":
            live = live[:number] + bytearray(max(0, number - len(live)))
            model.truncate(None, number, handle)
        else:
            durable = bytes(live)
            model.fsync(None, handle)
        assert model.read(handle, 1000, 0) == bytes(live)
    model.release(handle)
    model.close()
    assert (cut(model, base) / "f").read_bytes() == durable
