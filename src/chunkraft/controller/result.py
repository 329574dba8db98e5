"""ControllerResult: what a controller operation returns, records to commit and a response."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from chunkraft.controller.image import MetadataImage

__all__ = ["ControllerResult", "Operation"]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class ControllerResult(Generic[R]):
    """The records an operation wants committed and the response to answer once they are.

    Operations are pure functions of (committed image, request): they validate and return this;
    they never change state. The records commit as one atomic batch (all or none), whose first
    record takes offset ``image.offset + 1`` of the image the operation read: the quorum refuses
    the batch if any other write got there first, so an operation may compute offsets (a broker
    epoch is the offset of its RegisterBrokerRecord) from its image. An empty ``records`` means
    nothing to commit (an error, a validate-only request, or a read).
    """

    records: tuple[Any, ...]
    response: R
    atomic: bool = True
    """False lets the quorum commit a large result as several consecutive batches (Kafka's
    non-atomic results: fencing a broker, unfencing it); each batch is still all or nothing."""

    @classmethod
    def of(cls, response: R, records: tuple[Any, ...] | list[Any] = ()) -> ControllerResult[R]:
        return cls(tuple(records), response)

    @classmethod
    def non_atomic(cls, response: R, records: tuple[Any, ...] | list[Any] = ()
                   ) -> ControllerResult[R]:
        return cls(tuple(records), response, atomic=False)


Operation = Callable[["MetadataImage"], ControllerResult[R]]
"""An operation bound to its request: image in, result out."""
