"""The rows a broker agent exports about its own disk, declared like records.

These are not metadata records (they never enter the log), but they are declared the same way,
as NamedTuples with a :class:`~chunkraft.records.schema.FieldSpec` per field, so that their
Parquet and Spark schemas come from the same derivation as the controller's tables. Offsets
follow DESIGN §3: ``*_offset_held`` and chunk offsets are inclusive, ``log_end_offset``,
``high_watermark``, ``last_stable_offset`` and ``next_offset`` are exclusive.
"""

from __future__ import annotations

from typing import Annotated, NamedTuple

from chunkraft.records.schema import BOOL, INT32, INT64, STRING, Check, record_struct

__all__ = ["LocalConfigRow", "LocalLogRow", "LocalReplicaRow", "LocalSegmentRow",
           "ProducerIdBlockRow"]

_BrokerId = Annotated[int, INT32("0+", "The broker that exported the row.", check=Check.BROKER_ID)]
_Topic = Annotated[str, STRING("0+", "The topic name.")]
_TopicId = Annotated[str, STRING("0+", "The topic id in the broker's image, or '' if unknown.")]
_PartitionId = Annotated[int, INT32("0+", "The partition id.", check=Check.PARTITION_ID)]
_Directory = Annotated[str, STRING("0+", "The log directory's name under the broker's log dir.")]


@record_struct
class LocalLogRow(NamedTuple):
    """One log directory on the broker's disk (a partition's log or a chunk log)."""

    broker_id: _BrokerId = -1
    topic: _Topic = ""
    topic_id: _TopicId = ""
    partition_id: _PartitionId = -1
    directory: _Directory = ""
    log_start_offset: Annotated[int, INT64("0+", "First offset kept (inclusive).")] = 0
    log_end_offset: Annotated[int, INT64("0+", "Next offset to write (exclusive).")] = 0
    high_watermark: Annotated[int, INT64("0+", "High watermark (exclusive).")] = 0
    last_stable_offset: Annotated[int, INT64("0+", "Last stable offset (exclusive).")] = 0
    size_bytes: Annotated[int, INT64("0+", "Bytes of every segment of the log.")] = 0


@record_struct
class LocalSegmentRow(NamedTuple):
    """One segment of a local log: the offsets it holds, ``[base_offset, next_offset)``."""

    broker_id: _BrokerId = -1
    topic: _Topic = ""
    partition_id: _PartitionId = -1
    directory: _Directory = ""
    base_offset: Annotated[int, INT64("0+", "First offset of the segment (inclusive).")] = 0
    next_offset: Annotated[int, INT64("0+", "One past its last offset (exclusive).")] = 0
    size_bytes: Annotated[int, INT64("0+", "The segment file's size.")] = 0
    max_timestamp: Annotated[int, INT64("0+", "Largest record timestamp, or -1.")] = -1


@record_struct
class LocalReplicaRow(NamedTuple):
    """What the broker holds of one chunk (inactive, or the partition's active chunk).

    A row exists for every chunk the broker's image assigns to it and every chunk it holds data
    of; ``first_offset_held`` = ``last_offset_held`` = -1 and ``bytes_held`` = 0 when it holds
    none of it.
    """

    broker_id: _BrokerId = -1
    topic: _Topic = ""
    topic_id: _TopicId = ""
    partition_id: _PartitionId = -1
    chunk_start_offset: Annotated[int, INT64("0+", "The chunk's StartOffset.")] = -1
    active: Annotated[bool, BOOL("0+", "True for the partition's active chunk.")] = False
    stop_offset: Annotated[int, INT64("0+", "The chunk's StopOffset, -1 if active.")] = -1
    end_offset: Annotated[int, INT64("0+", "The chunk's EndOffset, -1 if active.")] = -1
    assigned: Annotated[bool, BOOL("0+", "The broker's image lists it as a replica.")] = False
    first_offset_held: Annotated[int, INT64("0+", "First offset held (inclusive), or -1.")] = -1
    last_offset_held: Annotated[int, INT64("0+", "Last offset held (inclusive), or -1.")] = -1
    bytes_held: Annotated[int, INT64("0+", "Bytes held of the chunk (segment share).")] = 0


@record_struct
class ProducerIdBlockRow(NamedTuple):
    """A block of producer ids the broker hands out: ``[block_start, block_end)``."""

    broker_id: _BrokerId = -1
    broker_epoch: Annotated[int, INT64("0+", "The broker epoch the block was allocated for.")] = -1
    block_start: Annotated[int, INT64("0+", "First producer id of the block (inclusive).")] = 0
    block_end: Annotated[int, INT64("0+", "One past its last producer id (exclusive).")] = 0


@record_struct
class LocalConfigRow(NamedTuple):
    """One topic key's value as the broker applies it to the topic's logs and produces.

    One row per topic the broker has a log of or is assigned a replica of, and per topic key
    the broker applies (``min.insync.replicas``, ``max.message.bytes``, ``segment.bytes``,
    ``segment.ms``, ``retention.ms``, ``retention.bytes``): the value of
    :class:`chunkraft.broker_agent.topic_configs.TopicConfig`, from the configurations the
    broker last followed and its own static settings.
    """

    broker_id: _BrokerId = -1
    topic: _Topic = ""
    name: Annotated[str, STRING("0+", "The topic key, e.g. retention.ms.")] = ""
    value: Annotated[str, STRING("0+", "The value the broker applies, as text.")] = ""
    source: Annotated[str, STRING(
        "0+", "Where it comes from, as DescribeConfigs names it: DYNAMIC_TOPIC_CONFIG, "
        "DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG or "
        "DEFAULT_CONFIG.")] = ""
