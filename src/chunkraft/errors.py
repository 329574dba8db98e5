"""Every exception chunkraft raises, in one place.

Hierarchy::

    ChunkraftError
    ├── RecordError                  a metadata record cannot be encoded, decoded or accepted
    │   ├── RecordDecodeError        bytes are not a valid record (names the byte offset)
    │   ├── RecordEncodeError        a record's values do not fit its schema
    │   └── RecordValidationError    a record's values are out of range (names the field)
    ├── SchemaError                  a record declaration is inconsistent (a programming error)
    ├── InvariantError               a record breaks an invariant of the metadata image at replay
    ├── ConfigError                  a controller setting is missing, malformed or contradictory
    ├── StorageError                 a data dir is unformatted, damaged, or another cluster's/node's
    ├── SealedMessageError           a peer's sealed Raft message is short, too large or forged
    └── LogFileError                 a log or snapshot file cannot be read as written
        ├── CorruptBatchError        a batch fails its CRC or its header is impossible
        ├── TornTailError            the file ends inside a batch (an interrupted write)
        ├── SnapshotError            a snapshot file is misnamed, incomplete or inconsistent
        └── JournalCorruptError      the Raft journal or dump on disk is torn or corrupt

Decode and file errors carry the byte position (and, where known, the log offset) at which the
problem was found, so an operator can locate it with ``chunkraft records dump``.
"""

from __future__ import annotations

__all__ = [
    "ChunkraftError",
    "ConfigError",
    "CorruptBatchError",
    "InvariantError",
    "JournalCorruptError",
    "LogFileError",
    "RecordDecodeError",
    "RecordEncodeError",
    "RecordError",
    "RecordValidationError",
    "SchemaError",
    "SealedMessageError",
    "SnapshotError",
    "StorageError",
    "TornTailError",
]


class ChunkraftError(Exception):
    """Base class of every error chunkraft raises on purpose."""


class RecordError(ChunkraftError):
    """A metadata record cannot be encoded, decoded or accepted."""


class RecordDecodeError(RecordError):
    """Bytes that are not a valid record; ``position`` is the byte offset of the problem."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} (at byte {position})")
        self.position = position


class RecordEncodeError(RecordError):
    """A record whose values cannot be written with its schema (wrong type, out of range)."""


class RecordValidationError(RecordError):
    """A record value outside its legal range; ``field`` names the offending field."""

    def __init__(self, record_name: str, field: str, message: str) -> None:
        super().__init__(f"{record_name}.{field}: {message}")
        self.record_name = record_name
        self.field = field


class SchemaError(ChunkraftError):
    """A record declaration that contradicts itself; raised at import time, never at run time."""


class InvariantError(ChunkraftError):
    """A record that cannot be replayed onto the image it was given (a programming or log error)."""


class ConfigError(ChunkraftError):
    """A setting that is missing, malformed or contradicts another; the message names the
    setting and where its value came from (``setting`` and ``source``, when known)."""

    def __init__(
        self, message: str, *, setting: str | None = None, source: str | None = None
    ) -> None:
        super().__init__(message)
        self.setting = setting
        self.source = source


class StorageError(ChunkraftError):
    """A data dir that cannot be formatted or used: unformatted, damaged, not empty, or
    formatted for another cluster or node."""


class SealedMessageError(ChunkraftError):
    """A sealed Raft message (``controller/raft/peer_cipher.py``) that cannot be opened: shorter
    than its header and tag, larger than the transport accepts, or failing its GCM tag (another
    password, or bytes changed on the way)."""


class LogFileError(ChunkraftError):
    """A log or snapshot file that cannot be read as it was written."""

    def __init__(self, message: str, path: str, position: int) -> None:
        super().__init__(f"{path}: {message} (at byte {position})")
        self.message = message
        self.path = path
        self.position = position


class CorruptBatchError(LogFileError):
    """A batch whose CRC does not match, or whose header is impossible."""


class TornTailError(LogFileError):
    """The file ends inside a batch: the tail of an interrupted write."""


class SnapshotError(LogFileError):
    """A snapshot file that is misnamed, incomplete (no end marker) or inconsistent."""


class JournalCorruptError(LogFileError):
    """The Raft journal or dump on disk is not what pysyncobj and chunkraft wrote."""
