"""The v2 batch's header fields and what they mean (``record_batch.layout``)."""

from __future__ import annotations

from chunkraft.dataplane.record_batch import (
    parse_header,
)
from tests.unit.dataplane.record_batch.batches import (
    small_batch,
)


def test_last_sequence_wraps_like_kafka() -> None:
    header = parse_header(small_batch(3, base_sequence=2**31 - 2, producer_id=1, producer_epoch=0))
    assert header.last_sequence == 0
    assert parse_header(small_batch(3)).last_sequence == -1
