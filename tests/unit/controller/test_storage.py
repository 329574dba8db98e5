"""Data dir formatting and the start-up check (chunkraft.controller.storage)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from chunkraft.controller.storage import (
    MetaProperties,
    StorageLayout,
    check_storage,
    format_storage,
    random_cluster_id,
    read_meta_properties,
)
from chunkraft.errors import StorageError
from chunkraft.records.files._fsync import fsync_directory
from chunkraft.records.uuids import kafka_uuid_str, parse_kafka_uuid

CLUSTER = parse_kafka_uuid("MkU3OEVBNTcwNTJENDM2Qg")
OTHER_CLUSTER = parse_kafka_uuid("ZbXTn_OZSR-JIQ_VK7MsgQ")


def test_format_writes_meta_properties_and_the_layout(tmp_path: Path) -> None:
    data_dir = tmp_path / "a" / "b" / "data"
    path = format_storage(data_dir, CLUSTER, 3)
    assert path == data_dir / "meta.properties"
    assert path.read_text() == (
        "# Written by `chunkraft controller format`. Do not edit.\n"
        "version=1\n"
        "cluster.id=MkU3OEVBNTcwNTJENDM2Qg\n"
        "node.id=3\n"
    )
    assert sorted(os.listdir(data_dir)) == ["meta.properties", "raft", "snapshots"]
    layout = StorageLayout(data_dir)
    assert layout.raft_dir.is_dir() and layout.snapshots_dir.is_dir()
    assert layout.raft_journal == data_dir / "raft" / "journal"
    assert layout.raft_dump == data_dir / "raft" / "dump"


def test_a_joining_controller_is_formatted_with_the_marker_and_nothing_else_changes(
        tmp_path: Path) -> None:
    format_storage(tmp_path / "new", CLUSTER, 4, joining=True)
    format_storage(tmp_path / "first", CLUSTER, 1)
    assert sorted(os.listdir(tmp_path / "new" / "raft")) == ["joining"]
    assert os.listdir(tmp_path / "first" / "raft") == []
    assert read_meta_properties(tmp_path / "new") == MetaProperties(CLUSTER, 4)


def test_format_accepts_an_existing_empty_dir(tmp_path: Path) -> None:
    format_storage(str(tmp_path), CLUSTER, 0)
    assert read_meta_properties(tmp_path) == MetaProperties(CLUSTER, 0)


def test_check_returns_what_format_wrote(tmp_path: Path) -> None:
    format_storage(tmp_path, CLUSTER, 2)
    assert check_storage(tmp_path, CLUSTER, 2) == MetaProperties(CLUSTER, 2, version=1)


def test_format_leaves_no_temp_file_and_syncs_the_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[Path] = []

    def recording(directory: str | os.PathLike[str]) -> None:
        synced.append(Path(directory))
        fsync_directory(directory)

    monkeypatch.setattr("chunkraft.controller.storage.fsync_directory", recording)
    data_dir = tmp_path / "new" / "data"
    format_storage(data_dir, CLUSTER, 1)
    assert not list(data_dir.glob("*.tmp"))
    # The new dirs' entries in their parents, then the rename of meta.properties.
    assert synced[:3] == [tmp_path, tmp_path / "new", data_dir]


def test_a_failed_write_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(StorageError, match=r"cannot format .*Input/output error"):
        format_storage(tmp_path, CLUSTER, 1)
    assert os.listdir(tmp_path) == []


def test_formatting_twice_is_refused(tmp_path: Path) -> None:
    format_storage(tmp_path, CLUSTER, 1)
    with pytest.raises(StorageError) as caught:
        format_storage(tmp_path, CLUSTER, 1)
    assert str(caught.value) == (
        f"data dir {tmp_path} is already formatted for cluster MkU3OEVBNTcwNTJENDM2Qg, node 1; "
        "use --ignore-formatted to accept that"
    )


def test_ignore_formatted_is_a_no_op_for_the_same_cluster_and_node(tmp_path: Path) -> None:
    path = format_storage(tmp_path, CLUSTER, 1)
    before = path.stat()
    (tmp_path / "raft" / "journal").write_bytes(b"journal")
    assert format_storage(tmp_path, CLUSTER, 1, ignore_formatted=True) == path
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert (tmp_path / "raft" / "journal").read_bytes() == b"journal"


def test_ignore_formatted_still_refuses_another_cluster(tmp_path: Path) -> None:
    format_storage(tmp_path, CLUSTER, 1)
    with pytest.raises(StorageError) as caught:
        format_storage(tmp_path, OTHER_CLUSTER, 1, ignore_formatted=True)
    message = str(caught.value)
    assert kafka_uuid_str(CLUSTER) in message and kafka_uuid_str(OTHER_CLUSTER) in message


def test_ignore_formatted_still_refuses_another_node(tmp_path: Path) -> None:
    format_storage(tmp_path, CLUSTER, 1)
    with pytest.raises(StorageError, match=r"already formatted for node 1 of cluster .*not node 2"):
        format_storage(tmp_path, CLUSTER, 2, ignore_formatted=True)


def test_a_non_empty_unformatted_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "journal").write_bytes(b"x")
    (tmp_path / "old").mkdir()
    with pytest.raises(StorageError) as caught:
        format_storage(tmp_path, CLUSTER, 1)
    assert str(caught.value) == (
        f"data dir {tmp_path} is not empty and not formatted (it holds journal, old); "
        "format an empty directory"
    )
    assert not (tmp_path / "meta.properties").exists()


def test_lost_and_found_and_an_interrupted_format_do_not_count(tmp_path: Path) -> None:
    (tmp_path / "lost+found").mkdir()
    (tmp_path / "meta.properties.tmp").write_text("version=1\ncluster.")
    format_storage(tmp_path, CLUSTER, 1)
    assert sorted(os.listdir(tmp_path)) == ["lost+found", "meta.properties", "raft", "snapshots"]


def test_a_file_as_data_dir_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_text("")
    with pytest.raises(StorageError, match="is not a directory"):
        format_storage(path, CLUSTER, 1)
    with pytest.raises(StorageError, match="is not a directory"):
        check_storage(path, CLUSTER, 1)


@pytest.mark.parametrize("exists", [False, True])
def test_an_unformatted_dir_refuses_to_start(tmp_path: Path, exists: bool) -> None:
    data_dir = tmp_path / "data"
    if exists:
        data_dir.mkdir()
    with pytest.raises(StorageError) as caught:
        check_storage(data_dir, CLUSTER, 4)
    assert str(caught.value) == (
        f"data dir {data_dir} is not formatted (no meta.properties): run `chunkraft controller "
        f"format --cluster-id MkU3OEVBNTcwNTJENDM2Qg --data-dir {data_dir} --node-id 4` first"
    )
    assert data_dir.exists() == exists  # the check changes nothing


def test_another_clusters_dir_refuses_to_start_naming_both_ids(tmp_path: Path) -> None:
    format_storage(tmp_path, OTHER_CLUSTER, 1)
    with pytest.raises(StorageError) as caught:
        check_storage(tmp_path, CLUSTER, 1)
    assert str(caught.value) == (
        f"data dir {tmp_path} belongs to cluster ZbXTn_OZSR-JIQ_VK7MsgQ, but this node is "
        "configured for cluster MkU3OEVBNTcwNTJENDM2Qg; refusing to start on another "
        "cluster's data"
    )


def test_another_nodes_dir_refuses_to_start(tmp_path: Path) -> None:
    format_storage(tmp_path, CLUSTER, 1)
    with pytest.raises(StorageError) as caught:
        check_storage(tmp_path, CLUSTER, 2)
    assert str(caught.value) == (
        f"data dir {tmp_path} was formatted for node 1, but this node is node 2; refusing to "
        "start on another node's data"
    )


def test_a_hex_cluster_id_in_meta_properties_is_the_same_cluster(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text(f"version=1\ncluster.id={CLUSTER}\nnode.id=1\n")
    assert check_storage(tmp_path, CLUSTER, 1).cluster_id == CLUSTER


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("version=2\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=1\n", "version '2'"),
        ("version=1\nnode.id=1\n", "no cluster.id"),
        ("cluster.id=MkU3OEVBNTcwNTJENDM2Qg\n", "no version, node.id"),
        ("version=1\ncluster.id=nope\nnode.id=1\n", "cluster.id: not a uuid: 'nope'"),
        ("version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\nnode.id=-1\n", "node.id '-1'"),
        ("version=1\ngarbage\n", "line 2: expected key=value"),
        ("", "no version, cluster.id, node.id"),
    ],
)
def test_a_damaged_meta_properties_is_refused(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "meta.properties").write_text(text)
    with pytest.raises(StorageError, match=r"meta.properties is damaged: ") as caught:
        check_storage(tmp_path, CLUSTER, 1)
    assert problem in str(caught.value)
    with pytest.raises(StorageError, match="is damaged"):
        format_storage(tmp_path, CLUSTER, 1, ignore_formatted=True)


def test_meta_properties_round_trip(tmp_path: Path) -> None:
    meta = MetaProperties(uuid.uuid4(), 2**31 - 1)
    assert MetaProperties.from_text(meta.to_text(), tmp_path / "meta.properties") == meta


def test_random_cluster_ids() -> None:
    ids = {random_cluster_id() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        assert len(text) == 22 and not text.startswith("-")
        assert kafka_uuid_str(parse_kafka_uuid(text)) == text


def test_read_meta_properties_of_an_unformatted_dir(tmp_path: Path) -> None:
    assert read_meta_properties(tmp_path) is None
    assert read_meta_properties(tmp_path / "absent") is None
