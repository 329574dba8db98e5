"""Kafka's v2 record batch (magic 2), byte-exact: build, parse, validate, rewrite, filter.

The package is the one import path for the batch format (``from chunkraft.dataplane.record_batch
import build_batch``); its modules each have one job, and import one way
(``varint``, ``layout`` <- ``build``, ``read`` <- ``rewrite``):

- ``layout``: the byte layout (drawn there), its constants, ``BatchHeader``, ``Record``,
  ``ProducerRecord``;
- ``varint``: the zigzag varints of the record fields;
- ``build``: ``build_batch`` and ``build_control_batch``;
- ``read``: ``parse_header``, ``iter_batches``, ``validate_batch``, ``decode_records``,
  ``control_type``, ``valid_prefix_length``;
- ``rewrite``: ``rewrite_base``, ``set_log_append_time``, ``filter_by_key_hash``,
  ``without_records``.

Every function here is pure (the in-place rewrites write only into the buffer they are given)
and safe to call from any thread. Errors in the bytes raise :class:`CorruptBatchError` (from
``chunkraft.errors``) with the byte position relative to the buffer passed in.
"""

from __future__ import annotations

from chunkraft.dataplane.record_batch.build import build_batch, build_control_batch
from chunkraft.dataplane.record_batch.layout import (
    BATCH_HEADER_SIZE,
    BATCH_OVERHEAD,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    MAGIC,
    MAX_OFFSET,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    BatchHeader,
    ControlType,
    ProducerRecord,
    Record,
    RecordInput,
    UnsupportedCompressionError,
)
from chunkraft.dataplane.record_batch.read import (
    control_type,
    decode_records,
    iter_batches,
    parse_header,
    valid_prefix_length,
    validate_batch,
)
from chunkraft.dataplane.record_batch.rewrite import (
    filter_by_key_hash,
    rewrite_base,
    set_log_append_time,
    without_records,
)
from chunkraft.errors import CorruptBatchError

__all__ = [
    "BATCH_HEADER_SIZE",
    "BATCH_OVERHEAD",
    "COMPRESSION_MASK",
    "CONTROL_FLAG",
    "MAGIC",
    "MAX_OFFSET",
    "TIMESTAMP_TYPE_FLAG",
    "TRANSACTIONAL_FLAG",
    "BatchHeader",
    "ControlType",
    "CorruptBatchError",
    "ProducerRecord",
    "Record",
    "RecordInput",
    "UnsupportedCompressionError",
    "build_batch",
    "build_control_batch",
    "control_type",
    "decode_records",
    "filter_by_key_hash",
    "iter_batches",
    "parse_header",
    "rewrite_base",
    "set_log_append_time",
    "valid_prefix_length",
    "validate_batch",
    "without_records",
]
