"""Kafka's v2 record batch (magic 2), byte-exact: build, parse, validate, rewrite, filter.

The package is the one import path for the batch format (``from chunkraft.dataplane.record_batch
import build_batch``); its modules each have one job, and import one way
(``varint``, ``layout`` <- ``compression`` <- ``build``, ``read`` <- ``rewrite``):

- ``layout``: the byte layout (drawn there), its constants, ``BatchHeader``, ``Record``,
  ``ProducerRecord``;
- ``varint``: the zigzag varints of the record fields;
- ``compression``: the codecs (gzip, snappy, lz4, zstd) of a compressed batch's records,
  ``compress``, ``decompress`` within a limit, ``decompressed_limit``;
- ``build``: ``build_batch`` (compressed or not) and ``build_control_batch``;
- ``read``: ``parse_header``, ``iter_batches``, ``validate_batch``, ``decode_records``,
  ``checked_records``, ``records_section``, ``control_type``, ``valid_prefix_length``;
- ``rewrite``: ``rewrite_base``, ``set_log_append_time``, ``filter_by_key_hash``,
  ``without_records``.

Every function here is pure (the in-place rewrites write only into the buffer they are given)
and safe to call from any thread. Errors in the bytes raise :class:`CorruptBatchError` (from
``chunkraft.errors``) with the byte position relative to the buffer passed in.
"""

from __future__ import annotations

from chunkraft.dataplane.record_batch.build import build_batch, build_control_batch
from chunkraft.dataplane.record_batch.compression import (
    DECOMPRESSION_RATIO,
    MAX_DECOMPRESSED_BYTES,
    Codec,
    codec_of,
    compress,
    decompress,
    decompressed_limit,
)
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
    DecompressionLimitError,
    ProducerRecord,
    Record,
    RecordInput,
    UnsupportedCompressionError,
)
from chunkraft.dataplane.record_batch.read import (
    checked_records,
    control_type,
    decode_records,
    iter_batches,
    parse_header,
    records_section,
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
    "DECOMPRESSION_RATIO",
    "MAGIC",
    "MAX_DECOMPRESSED_BYTES",
    "MAX_OFFSET",
    "TIMESTAMP_TYPE_FLAG",
    "TRANSACTIONAL_FLAG",
    "BatchHeader",
    "Codec",
    "ControlType",
    "CorruptBatchError",
    "DecompressionLimitError",
    "ProducerRecord",
    "Record",
    "RecordInput",
    "UnsupportedCompressionError",
    "build_batch",
    "build_control_batch",
    "checked_records",
    "codec_of",
    "compress",
    "control_type",
    "decode_records",
    "decompress",
    "decompressed_limit",
    "filter_by_key_hash",
    "iter_batches",
    "parse_header",
    "records_section",
    "rewrite_base",
    "set_log_append_time",
    "valid_prefix_length",
    "validate_batch",
    "without_records",
]
