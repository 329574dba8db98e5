"""controller/operations/chunk_sizes: the leader's table of reported chunk sizes and the
report operation (no records, stale epochs refused)."""

from __future__ import annotations

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.chunk_sizes import ChunkSizeTable, report_chunk_sizes
from chunkraft.error_codes import Errors
from chunkraft.protocol.chunk_sizes import ChunkSize, ChunkSizesRequest
from chunkraft.records import RemoveTopicRecord
from tests.unit.controller.operations.topic_support import (
    ORDERS_ID,
    apply,
    chunk,
    cluster,
    with_topic,
)


def _image() -> MetadataImage:
    """orders-0 on (0, 1): inactive chunk 0..99, active chunk from 100."""
    image = with_topic(cluster(range(3)), replicas=((0, 1),), start_offset=100,
                       start_timestamp=5)
    return apply(image, chunk(0, 99, 99, (0, 1), start_timestamp=0))


def _epoch(image: MetadataImage, broker_id: int) -> int:
    registration = image.brokers.get(broker_id)
    assert registration is not None
    return registration.broker_epoch


def _report(broker_id: int, *items: tuple[str, int, int, int], epoch: int
            ) -> ChunkSizesRequest:
    return ChunkSizesRequest(
        broker_id=broker_id, broker_epoch=epoch,
        sizes=tuple(ChunkSize(topic_name=t, partition_id=p, start_offset=s, size_in_bytes=b)
                    for t, p, s, b in items))


def test_the_largest_report_of_each_chunk_counts_and_unknown_chunks_are_left_out() -> None:
    image, table = _image(), ChunkSizeTable()
    epoch0, epoch1 = _epoch(image, 0), _epoch(image, 1)
    result = report_chunk_sizes(image, _report(0, ("orders", 0, 0, 700), ("orders", 0, 100, 50),
                                               ("orders", 0, 42, 1), ("nope", 0, 0, 1),
                                               ("orders", 9, 0, 1), epoch=epoch0), table)
    assert result.records == ()  # soft state only: nothing for the log
    assert (result.response.error_code, result.response.accepted) == (0, 2)
    # Broker 1 is still copying chunk 0: a smaller size does not lower it.
    report_chunk_sizes(image, _report(1, ("orders", 0, 0, 300), epoch=epoch1), table)
    assert table.sizes(image) == {(ORDERS_ID, 0, 0): 700, (ORDERS_ID, 0, 100): 50}
    # A later report of the same broker replaces its own earlier one.
    report_chunk_sizes(image, _report(0, ("orders", 0, 100, 80), epoch=epoch0), table)
    assert table.sizes(image)[(ORDERS_ID, 0, 100)] == 80


def test_a_stale_broker_epoch_is_refused_and_keeps_nothing() -> None:
    image, table = _image(), ChunkSizeTable()
    result = report_chunk_sizes(image, _report(0, ("orders", 0, 0, 700), epoch=-1), table)
    assert result.response.error_code == Errors.STALE_BROKER_EPOCH.code
    assert result.records == () and table.sizes(image) == {}
    unknown = report_chunk_sizes(image, _report(7, ("orders", 0, 0, 700), epoch=1), table)
    assert unknown.response.error_code == Errors.STALE_BROKER_EPOCH.code


def test_chunks_the_image_no_longer_has_are_forgotten() -> None:
    image, table = _image(), ChunkSizeTable()
    epoch0 = _epoch(image, 0)
    report_chunk_sizes(image, _report(0, ("orders", 0, 0, 700), epoch=epoch0), table)
    gone = apply(image, RemoveTopicRecord(topic_id=ORDERS_ID))
    assert table.sizes(gone) == {}
    assert table.sizes(image) == {}  # forgotten, not just hidden
