"""Exceptions the log store raises.

Hierarchy::

    ApiException (chunkraft.error_codes)      a Kafka error answered for the request or partition
    ├── OffsetOutOfRangeError                 OFFSET_OUT_OF_RANGE: a read outside [log start, LEO]
    ├── DuplicateSequenceError                DUPLICATE_SEQUENCE_NUMBER: a retried batch; carries
    │                                         the offsets it got the first time (answer success)
    └── InconsistentTopicIdError              INCONSISTENT_TOPIC_ID: the directory is another topic
    ValueError
    └── UnexpectedAppendOffsetError           a replicated batch starting below the log end offset

Every other refusal of an append is a plain ``ApiException`` (CORRUPT_MESSAGE,
OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, ...).
"""

from __future__ import annotations

from chunkraft.error_codes import ApiException, Errors

__all__ = [
    "DuplicateSequence",
    "DuplicateSequenceError",
    "InconsistentTopicIdError",
    "OffsetOutOfRange",
    "OffsetOutOfRangeError",
    "UnexpectedAppendOffsetError",
]


class OffsetOutOfRangeError(ApiException):
    """A read below the log start offset or above the log end offset."""

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(
            Errors.OFFSET_OUT_OF_RANGE,
            f"offset {offset} is outside [{log_start_offset}, {log_end_offset}]",
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class DuplicateSequenceError(ApiException):
    """The batch repeats one of the producer's last five: nothing was appended.

    Kafka answers the produce request with success and the offsets the batch got when it was
    first written: ``first_offset``, ``last_offset`` and its ``timestamp``.
    """

    def __init__(self, producer_id: int, first_offset: int, last_offset: int, timestamp: int):
        super().__init__(
            Errors.DUPLICATE_SEQUENCE_NUMBER,
            f"producer {producer_id} resent the batch already at offsets "
            f"{first_offset}..{last_offset}",
        )
        self.producer_id = producer_id
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.timestamp = timestamp


class InconsistentTopicIdError(ApiException):
    """The log directory's ``partition.metadata`` names another topic id."""

    def __init__(self, found: str, expected: str) -> None:
        super().__init__(
            Errors.INCONSISTENT_TOPIC_ID, f"log directory holds topic {found}, not {expected}"
        )
        self.found = found
        self.expected = expected


class UnexpectedAppendOffsetError(ValueError):
    """A replicated append whose first batch starts below the log end offset."""


# The names the team spec uses.
DuplicateSequence = DuplicateSequenceError
OffsetOutOfRange = OffsetOutOfRangeError
