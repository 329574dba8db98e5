"""A snapshot is the image written as records: write one, and load one into a ready image."""

from __future__ import annotations

import contextlib
import gc
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from chunkraft.controller.image.delta import MetadataDelta
from chunkraft.controller.image.image import MetadataImage
from chunkraft.controller.image.provenance import MetadataProvenance
from chunkraft.records import decode_records
from chunkraft.records.files import parse_snapshot_name, read_snapshot_batches, write_snapshot

__all__ = ["load_image_snapshot", "write_image_snapshot"]


def write_image_snapshot(
    image: MetadataImage, directory: str | os.PathLike[str], cluster_id: uuid.UUID
) -> Path:
    """Writes ``image.to_records()`` as snapshot ``<offset + 1>-<epoch>.checkpoint``.

    Atomic: the file appears whole (fsynced, renamed, directory fsynced) or not at all.
    """
    if image.epoch < 0 or image.offset < 0:
        raise ValueError(
            f"only an image read from the log can be snapshotted (offset {image.offset}, "
            f"epoch {image.epoch})"
        )
    return write_snapshot(
        directory,
        end_offset=image.provenance.end_offset,
        epoch=image.epoch,
        cluster_id=cluster_id,
        records=image.encoded_records(),
    )


def load_image_snapshot(path: str | os.PathLike[str], *, freeze: bool = True) -> MetadataImage:
    """Reads a snapshot into an image at offset ``end - 1`` and the snapshot's epoch.

    With ``freeze`` (the default, for processes that keep the image), the loaded objects are
    moved to the garbage collector's permanent generation (``gc.freeze()``).

    All or nothing: a torn, corrupt or inconsistent file raises (SnapshotError,
    CorruptBatchError, RecordDecodeError or InvariantError) and no image is returned.
    """
    snapshot_id = parse_snapshot_name(path)
    delta = MetadataDelta(MetadataImage.EMPTY)
    replay_all = delta.replay_all
    with gc_paused():
        for batch in read_snapshot_batches(path):
            replay_all(decode_records(batch.records))
        image = delta.apply(MetadataProvenance(snapshot_id.end_offset - 1, snapshot_id.epoch))
    if freeze:
        # The image is long-lived and acyclic: move it out of the collector's sight, or every
        # full collection rescans millions of tuples (docs/architecture.md has the measurement).
        gc.freeze()
    return image


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pauses the cyclic garbage collector while building millions of acyclic tuples.

    Every few hundred allocations CPython would otherwise scan the growing heap; records and
    images hold no reference cycles, so nothing is lost by waiting until the load is done.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
