"""A controller's data dir: formatted by ``chunkraft controller format``, checked at start.

Like ``kafka-storage format``: a data dir is formatted once, for one cluster and one node, by
writing ``meta.properties``; a controller refuses to start on a dir that is not formatted, or
that was formatted for another cluster or another node, so a misconfigured node can never join
(or mix its journal into) the wrong quorum. Layout::

    <data.dir>/
        meta.properties     version=1, cluster.id, node.id (written once, atomically)
        raft/journal        the Raft journal (checked_journal.py: a CRC-32C per record)
        raft/dump           the Raft dump (the image at the last compaction)
        snapshots/          record snapshots (*.checkpoint) for the metadata stream

``format_storage`` creates ``raft/`` and ``snapshots/`` after ``meta.properties``; whoever
writes into them still creates them if missing (a crash may fall between the two steps).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from chunkraft.controller.properties import format_properties, parse_properties
from chunkraft.controller.raft.membership import mark_joining
from chunkraft.errors import StorageError
from chunkraft.records.files._fsync import fsync_directory
from chunkraft.records.uuids import kafka_uuid_str, parse_kafka_uuid, random_kafka_uuid

__all__ = [
    "META_PROPERTIES",
    "META_VERSION",
    "MetaProperties",
    "StorageLayout",
    "check_storage",
    "format_storage",
    "random_cluster_id",
    "read_meta_properties",
]

META_PROPERTIES = "meta.properties"
META_VERSION = 1
"""The one ``meta.properties`` version this code writes and reads (Kafka's KRaft version 1)."""

_TEMP_SUFFIX = ".tmp"
# Entries an empty, freshly mounted file system already holds; they do not make a dir "in use".
_MOUNT_ARTIFACTS = frozenset({"lost+found"})


@dataclass(frozen=True, slots=True)
class StorageLayout:
    """The paths inside a data dir. Pure: building one touches nothing on disk."""

    data_dir: Path

    @property
    def meta_properties(self) -> Path:
        return self.data_dir / META_PROPERTIES

    @property
    def raft_dir(self) -> Path:
        return self.data_dir / "raft"

    @property
    def raft_journal(self) -> Path:
        return self.raft_dir / "journal"

    @property
    def raft_dump(self) -> Path:
        return self.raft_dir / "dump"

    @property
    def snapshots_dir(self) -> Path:
        return self.data_dir / "snapshots"


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """What ``meta.properties`` says: the cluster and node a data dir belongs to."""

    cluster_id: uuid.UUID
    node_id: int
    version: int = META_VERSION

    def to_text(self) -> str:
        """The file's content, ``version``, ``cluster.id`` (Kafka's base64 form), ``node.id``."""
        return format_properties(
            {
                "version": str(self.version),
                "cluster.id": kafka_uuid_str(self.cluster_id),
                "node.id": str(self.node_id),
            },
            comment="Written by `chunkraft controller format`. Do not edit.",
        )

    @classmethod
    def from_text(cls, text: str, path: Path) -> MetaProperties:
        """Parses the file's content; StorageError naming ``path`` if it is damaged."""

        def damaged(problem: str) -> StorageError:
            return StorageError(f"{path} is damaged: {problem}")

        try:
            values = {key: entry.value for key, entry in parse_properties(text).items()}
        except ValueError as error:
            raise damaged(str(error)) from None
        missing = [key for key in ("version", "cluster.id", "node.id") if key not in values]
        if missing:
            raise damaged(f"no {', '.join(missing)}")
        if values["version"] != str(META_VERSION):
            raise damaged(
                f"version {values['version']!r}; this chunkraft reads version {META_VERSION}"
            )
        try:
            cluster_id = parse_kafka_uuid(values["cluster.id"])
        except ValueError as error:
            raise damaged(f"cluster.id: {error}") from None
        if not values["node.id"].isascii() or not values["node.id"].isdigit():
            raise damaged(f"node.id {values['node.id']!r} is not a non-negative integer")
        return cls(cluster_id, int(values["node.id"]))


def random_cluster_id() -> str:
    """A new cluster id in Kafka's base64 form, as ``kafka-storage random-uuid`` prints it."""
    return kafka_uuid_str(random_kafka_uuid())


def read_meta_properties(data_dir: str | os.PathLike[str]) -> MetaProperties | None:
    """The data dir's ``meta.properties``, or None if there is none (the dir is unformatted)."""
    path = StorageLayout(Path(data_dir)).meta_properties
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise StorageError(f"data dir {data_dir} is not a directory") from None
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        raise StorageError(f"cannot read {path}: {reason}") from error
    return MetaProperties.from_text(text, path)


def _format_command(data_dir: Path, cluster_id: uuid.UUID, node_id: int) -> str:
    return (
        f"chunkraft controller format --cluster-id {kafka_uuid_str(cluster_id)} "
        f"--data-dir {data_dir} --node-id {node_id}"
    )


def check_storage(
    data_dir: str | os.PathLike[str], cluster_id: uuid.UUID, node_id: int
) -> MetaProperties:
    """The data dir's ``meta.properties`` if it was formatted for this cluster and node.

    Raises StorageError if the dir is not formatted (the message gives the ``chunkraft
    controller format`` command to run), if ``meta.properties`` is damaged, or if it names
    another cluster id or node id (the message names both values). Changes nothing on disk.
    """
    directory = Path(data_dir)
    meta = read_meta_properties(directory)
    if meta is None:
        raise StorageError(
            f"data dir {directory} is not formatted (no {META_PROPERTIES}): run "
            f"`{_format_command(directory, cluster_id, node_id)}` first"
        )
    if meta.cluster_id != cluster_id:
        raise StorageError(
            f"data dir {directory} belongs to cluster {kafka_uuid_str(meta.cluster_id)}, but "
            f"this node is configured for cluster {kafka_uuid_str(cluster_id)}; refusing to "
            "start on another cluster's data"
        )
    if meta.node_id != node_id:
        raise StorageError(
            f"data dir {directory} was formatted for node {meta.node_id}, but this node is "
            f"node {node_id}; refusing to start on another node's data"
        )
    return meta


def _created_parents(directory: Path) -> list[Path]:
    """``directory`` and its ancestors that do not exist yet, outermost first."""
    missing: list[Path] = []
    for path in (directory, *directory.parents):
        if path.exists():
            break
        missing.append(path)
    return missing[::-1]


def _write_atomically(path: Path, text: str) -> None:
    """Writes ``path`` so that a crash leaves either no file or the whole file, never a part."""
    temp = path.with_name(path.name + _TEMP_SUFFIX)
    try:
        with open(temp, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    fsync_directory(path.parent)


def format_storage(
    data_dir: str | os.PathLike[str],
    cluster_id: uuid.UUID,
    node_id: int,
    *,
    ignore_formatted: bool = False,
    joining: bool = False,
) -> Path:
    """Formats ``data_dir`` for ``cluster_id`` and ``node_id``; returns its ``meta.properties``.

    Creates the dir (and missing parents), writes ``meta.properties`` atomically (temp file,
    fsync, rename, directory fsync), then creates ``raft/`` and ``snapshots/``. Raises
    StorageError, and writes nothing, if the dir is already formatted (with ``ignore_formatted``
    and the same cluster and node ids, that is a no-op instead), if it holds anything else (a
    ``lost+found`` of a fresh file system and the temp file of an interrupted format excepted),
    or if it cannot be created or written.

    ``joining`` (``--no-initial-controllers``, as kafka-storage names it): the node joins a
    quorum that already runs, as a voter an operator adds with ``chunkraft quorum
    add-controller``; its ``raft/joining`` marker keeps it from starting elections until it has
    heard from the leader (``controller/raft/membership.py``).
    """
    directory = Path(data_dir)
    layout = StorageLayout(directory)
    wanted = MetaProperties(cluster_id, node_id)
    existing = read_meta_properties(directory)
    if existing is not None:
        if ignore_formatted and existing == wanted:
            return layout.meta_properties
        if existing.cluster_id != cluster_id:
            raise StorageError(
                f"data dir {directory} is already formatted for cluster "
                f"{kafka_uuid_str(existing.cluster_id)}, not {kafka_uuid_str(cluster_id)}; "
                "a data dir belongs to one cluster for ever"
            )
        if existing.node_id != node_id:
            raise StorageError(
                f"data dir {directory} is already formatted for node {existing.node_id} of "
                f"cluster {kafka_uuid_str(existing.cluster_id)}, not node {node_id}"
            )
        raise StorageError(
            f"data dir {directory} is already formatted for cluster "
            f"{kafka_uuid_str(cluster_id)}, node {node_id}; use --ignore-formatted to accept that"
        )
    try:
        _prepare_directory(directory, layout)
        _write_atomically(layout.meta_properties, wanted.to_text())
        layout.raft_dir.mkdir(exist_ok=True)
        layout.snapshots_dir.mkdir(exist_ok=True)
        if joining:
            mark_joining(layout.raft_dir)
        fsync_directory(directory)
    except OSError as error:
        target = error.filename or directory
        raise StorageError(f"cannot format {directory}: {target}: {error.strerror}") from error
    return layout.meta_properties


def _prepare_directory(directory: Path, layout: StorageLayout) -> None:
    """Creates ``directory`` durably, or checks that the existing one holds nothing of ours."""
    if directory.exists() and not directory.is_dir():
        raise StorageError(f"data dir {directory} is not a directory")
    temp_name = layout.meta_properties.name + _TEMP_SUFFIX
    if directory.is_dir():
        others = sorted(
            name for name in os.listdir(directory) if name not in _MOUNT_ARTIFACTS | {temp_name}
        )
        if others:
            shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
            raise StorageError(
                f"data dir {directory} is not empty and not formatted (it holds {shown}); "
                "format an empty directory"
            )
        # The leftover of a format that crashed before its rename: never a valid file.
        (directory / temp_name).unlink(missing_ok=True)
        return
    created = _created_parents(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # A new directory survives a crash only once its parent's entry for it is synced.
    for path in created:
        fsync_directory(path.parent)
