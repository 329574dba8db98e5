from __future__ import annotations

import itertools

from chunkraft.controller.image import PRODUCER_ID_BLOCK_SIZE, MetadataImage
from chunkraft.controller.operations.producer_ids import MAX_PRODUCER_ID, allocate_producer_ids
from chunkraft.error_codes import Errors
from chunkraft.protocol.producer_ids import AllocateProducerIdsRequest
from chunkraft.records import ProducerIdsRecord
from tests.support.controller import commit
from tests.unit.controller.operations.cluster_builders import apply, cluster, registration_of


def ask(image: MetadataImage, broker_id: int) -> AllocateProducerIdsRequest:
    return AllocateProducerIdsRequest(
        broker_id=broker_id, broker_epoch=registration_of(image, broker_id).broker_epoch
    )


def test_the_first_block_starts_at_zero() -> None:
    image = cluster(1)
    result = allocate_producer_ids(image, ask(image, 1))
    assert result.response.error_code == 0
    assert (result.response.producer_id_start, result.response.producer_id_len) == (0, 1000)
    assert PRODUCER_ID_BLOCK_SIZE == 1000
    assert result.records == (ProducerIdsRecord(
        broker_id=1, broker_epoch=registration_of(image, 1).broker_epoch, next_producer_id=1000
    ),)
    after = commit(image, result)
    assert after.producer_ids.next_producer_id == 1000
    assert after.producer_ids.last_broker_id == 1


def test_blocks_never_overlap_and_grow() -> None:
    image = cluster(1, 2, 3)
    blocks: list[range] = []
    for turn in range(12):
        result = allocate_producer_ids(image, ask(image, 1 + turn % 3))
        assert result.response.error_code == 0
        blocks.append(range(result.response.producer_id_start,
                            result.response.producer_id_start + result.response.producer_id_len))
        image = commit(image, result)
    starts = [block.start for block in blocks]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    for earlier, later in itertools.pairwise(blocks):
        assert earlier.stop == later.start  # adjacent: no overlap, no gap
    assert image.producer_ids.next_producer_id == 12 * PRODUCER_ID_BLOCK_SIZE


def test_an_uncommitted_allocation_hands_nothing_out() -> None:
    image = cluster(1)
    first = allocate_producer_ids(image, ask(image, 1))
    again = allocate_producer_ids(image, ask(image, 1))
    assert first.response.producer_id_start == again.response.producer_id_start == 0


def test_a_wrong_broker_epoch_is_stale() -> None:
    image = cluster(1)
    epoch = registration_of(image, 1).broker_epoch
    result = allocate_producer_ids(
        image, AllocateProducerIdsRequest(broker_id=1, broker_epoch=epoch + 5))
    assert result.records == ()
    assert result.response.error_code == Errors.STALE_BROKER_EPOCH.code
    assert result.response.producer_id_len == 0
    assert f"Expected broker epoch {epoch}" in (result.response.error_message or "")


def test_an_unknown_broker_is_stale() -> None:
    result = allocate_producer_ids(
        cluster(1), AllocateProducerIdsRequest(broker_id=7, broker_epoch=0))
    assert result.records == ()
    assert result.response.error_code == Errors.STALE_BROKER_EPOCH.code
    assert "broker id 7" in (result.response.error_message or "")


def test_the_id_space_can_run_out() -> None:
    image = cluster(1)
    image = apply(image, ProducerIdsRecord(broker_id=1, broker_epoch=0,
                                           next_producer_id=MAX_PRODUCER_ID - 1000))
    last = allocate_producer_ids(image, ask(image, 1))
    assert last.response.error_code == 0
    assert last.response.producer_id_start + last.response.producer_id_len == MAX_PRODUCER_ID
    image = commit(image, last)
    result = allocate_producer_ids(image, ask(image, 1))
    assert result.records == ()
    assert result.response.error_code == Errors.UNKNOWN_SERVER_ERROR.code
    assert "Exhausted" in (result.response.error_message or "")
