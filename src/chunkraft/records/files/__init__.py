"""The on-disk format of metadata log segments and snapshots: batches of encoded records.

This package frames records the codec (:mod:`chunkraft.records`) has already encoded; it never
looks inside a record, so it reads files whose records the running code cannot decode. The
format is documented in ``docs/file-format.md``.

- :mod:`.batch`: the batch layout, :func:`encode_batch`, :class:`Batch`
- :mod:`.reader`: :func:`read_batches` (strict) and :func:`scan_log` (recovery)
- :mod:`.log_writer`: :class:`LogWriter`, the append-only segment writer
- :mod:`.snapshot`: snapshot names, :func:`write_snapshot`, :func:`read_snapshot`
"""

from __future__ import annotations

from chunkraft.records.files.batch import (
    END_OF_SNAPSHOT,
    HEADER_SIZE,
    MAGIC,
    MAX_BATCH_LENGTH,
    MIN_BATCH_LENGTH,
    Batch,
    encode_batch,
    encode_record_batch,
)
from chunkraft.records.files.log_writer import LogWriter, Recovery
from chunkraft.records.files.reader import BatchSource, ScanResult, read_batches, scan_log
from chunkraft.records.files.snapshot import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_RECORDS_PER_BATCH,
    SnapshotFile,
    SnapshotId,
    latest_snapshot,
    list_snapshots,
    parse_snapshot_name,
    read_embedded_snapshot_batches,
    read_snapshot,
    read_snapshot_batches,
    remove_partial_snapshots,
    snapshot_batches,
    snapshot_name,
    write_snapshot,
)

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_RECORDS_PER_BATCH",
    "END_OF_SNAPSHOT",
    "HEADER_SIZE",
    "MAGIC",
    "MAX_BATCH_LENGTH",
    "MIN_BATCH_LENGTH",
    "Batch",
    "BatchSource",
    "LogWriter",
    "Recovery",
    "ScanResult",
    "SnapshotFile",
    "SnapshotId",
    "encode_batch",
    "encode_record_batch",
    "latest_snapshot",
    "list_snapshots",
    "parse_snapshot_name",
    "read_batches",
    "read_embedded_snapshot_batches",
    "read_snapshot",
    "read_snapshot_batches",
    "remove_partial_snapshots",
    "scan_log",
    "snapshot_batches",
    "snapshot_name",
    "write_snapshot",
]
