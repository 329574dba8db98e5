"""The local log store: a directory per partition replica of segments, indexes and checkpoints.

``LogManager`` owns the logs of a broker; ``UnifiedLog`` is one partition replica's log (append as
leader or follower, read whole batches, truncate, delete chunk ranges, retention, recovery), built
in layers: ``log_state`` (segments, offsets, checkpoints, flushing), ``log_recovery`` (opening),
``log_truncation``, ``log_reads``, then ``unified_log`` (the appends), with ``log_batches`` (the
checks of one batch). The modules below them each do one job: ``segment`` (a .log file and its
indexes), ``offset_index``, ``time_index``, ``txn_index``, ``leader_epoch``, ``producer_state``,
``checkpoint``.
"""

from chunkraft.broker_agent.storage.config import (
    AbortedTransaction,
    LogAppendInfo,
    LogConfig,
    ReadResult,
    SegmentInfo,
)
from chunkraft.broker_agent.storage.errors import (
    DuplicateSequence,
    DuplicateSequenceError,
    InconsistentTopicIdError,
    OffsetOutOfRange,
    OffsetOutOfRangeError,
    UnexpectedAppendOffsetError,
)
from chunkraft.broker_agent.storage.leader_epoch import EpochEntry
from chunkraft.broker_agent.storage.log_manager import LogManager
from chunkraft.broker_agent.storage.producer_state import BatchMetadata, ProducerEntry
from chunkraft.broker_agent.storage.unified_log import UnifiedLog

__all__ = [
    "AbortedTransaction",
    "BatchMetadata",
    "DuplicateSequence",
    "DuplicateSequenceError",
    "EpochEntry",
    "InconsistentTopicIdError",
    "LogAppendInfo",
    "LogConfig",
    "LogManager",
    "OffsetOutOfRange",
    "OffsetOutOfRangeError",
    "ProducerEntry",
    "ReadResult",
    "SegmentInfo",
    "UnexpectedAppendOffsetError",
    "UnifiedLog",
]
