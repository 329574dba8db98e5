"""AllocateProducerIds (KIP-730): hands a broker the next block of producer ids."""

from __future__ import annotations

from chunkraft.controller.image import PRODUCER_ID_BLOCK_SIZE, MetadataImage
from chunkraft.controller.result import ControllerResult
from chunkraft.error_codes import Errors
from chunkraft.protocol.producer_ids import AllocateProducerIdsRequest, AllocateProducerIdsResponse
from chunkraft.records import ProducerIdsRecord

__all__ = ["MAX_PRODUCER_ID", "allocate_producer_ids"]

MAX_PRODUCER_ID = 2**63 - 1
"""Producer ids are int64; the last block must end at or below this."""


def allocate_producer_ids(
    image: MetadataImage, request: AllocateProducerIdsRequest
) -> ControllerResult[AllocateProducerIdsResponse]:
    """The block ``[next, next + PRODUCER_ID_BLOCK_SIZE)`` from ``image.producer_ids``.

    STALE_BROKER_EPOCH when the broker is not registered or the epoch is not its registration's
    (as Kafka's ``checkBrokerEpoch``); UNKNOWN_SERVER_ERROR when the int64 id space is exhausted.
    Otherwise one ProducerIdsRecord whose ``next_producer_id`` is the block's end: replay moves
    the image's next id there, so the next call (on the committed image) starts where this block
    ends, and blocks never overlap. Only the commit hands the block out: an uncommitted result
    is simply retried by the broker.
    """
    registration = image.brokers.get(request.broker_id)
    if registration is None:
        return _error(
            Errors.STALE_BROKER_EPOCH,
            f"No broker registration found for broker id {request.broker_id}",
        )
    if registration.broker_epoch != request.broker_epoch:
        return _error(
            Errors.STALE_BROKER_EPOCH,
            f"Expected broker epoch {registration.broker_epoch}, but got broker epoch "
            f"{request.broker_epoch}",
        )
    start = image.producer_ids.next_producer_id
    if start > MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
        return _error(
            Errors.UNKNOWN_SERVER_ERROR,
            f"Exhausted all producer ids: a block from {start} would pass the int64 limit",
        )
    end = start + PRODUCER_ID_BLOCK_SIZE
    record = ProducerIdsRecord(
        broker_id=request.broker_id, broker_epoch=request.broker_epoch, next_producer_id=end
    )
    response = AllocateProducerIdsResponse(
        producer_id_start=start, producer_id_len=PRODUCER_ID_BLOCK_SIZE
    )
    return ControllerResult.of(response, [record])


def _error(error: Errors, message: str) -> ControllerResult[AllocateProducerIdsResponse]:
    return ControllerResult.of(
        AllocateProducerIdsResponse(error_code=error.code, error_message=message)
    )
