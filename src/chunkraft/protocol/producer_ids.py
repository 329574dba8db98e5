"""AllocateProducerIds (KIP-730): a broker asks the controller for a block of producer ids."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, Strict

from chunkraft.protocol.base import Message, StrictInt

__all__ = ["AllocateProducerIdsRequest", "AllocateProducerIdsResponse"]


class AllocateProducerIdsRequest(Message):
    """A registered broker, identified by id and epoch, asks for the next block of ids."""

    broker_id: Annotated[int, Strict(), Field(ge=0, le=2**31 - 1)]
    broker_epoch: Annotated[int, Strict(), Field(ge=-1, le=2**63 - 1)]


class AllocateProducerIdsResponse(Message):
    """The block ``[producer_id_start, producer_id_start + producer_id_len)``, or an error."""

    error_code: StrictInt = 0
    error_message: str | None = None
    producer_id_start: StrictInt = -1
    producer_id_len: StrictInt = 0
