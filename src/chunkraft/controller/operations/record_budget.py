"""The cap on records one user operation may write, shared by the topic and chunk operations."""

from __future__ import annotations

from chunkraft.error_codes import Errors

__all__ = ["MAX_PRIOR_EPOCHS_PER_USER_OP", "MAX_RECORDS_PER_USER_OP", "RecordBudget"]

MAX_RECORDS_PER_USER_OP = 10_000
"""Kafka's cap (``QuorumController.MAX_RECORDS_PER_USER_OP``): one batch stays small enough to
replicate and replay quickly. An operation refuses the items that would exceed it."""

MAX_PRIOR_EPOCHS_PER_USER_OP = 100_000
"""The cap on KIP-253 prior partition epochs one operation writes (about 9 bytes each encoded,
so about 1 MB). Every new partition of an expansion lists every existing partition, so an
expansion from N to N + M partitions writes N * M of them: without this cap, 5,000 -> 10,000
(within the record cap) would be 25 million entries, hundreds of MB in one batch."""


class RecordBudget:
    """How many records (or other ``unit``) an operation may still write.

    An operation calls :meth:`check` for an item before the expensive part of its validation
    and :meth:`spend` once the item succeeded, so a refused item costs nothing and a later,
    smaller item may still fit. Not thread-safe: one per operation call.
    """

    __slots__ = ("left", "limit", "unit")

    def __init__(self, limit: int = MAX_RECORDS_PER_USER_OP, unit: str = "records") -> None:
        self.limit = limit
        self.left = limit
        self.unit = unit

    def check(self, count: int, what: str) -> None:
        """Raises ApiException(POLICY_VIOLATION) if ``count`` records for ``what`` do not fit."""
        if count <= self.left:
            return
        if count > self.limit:
            raise Errors.POLICY_VIOLATION.exception(
                f"{what} needs {count} {self.unit}, but one operation writes at most "
                f"{self.limit}; split it into smaller steps."
            )
        raise Errors.POLICY_VIOLATION.exception(
            f"{what} needs {count} {self.unit}, but only {self.left} of the {self.limit} "
            f"{self.unit} one operation may write are left after the items before it; send it "
            "in a separate request."
        )

    def spend(self, count: int) -> None:
        """Takes ``count`` records (after a successful :meth:`check`)."""
        self.left -= count
