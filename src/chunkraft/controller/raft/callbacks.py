"""pysyncobj's command callbacks, ``callback(result, error)``, settling a Future."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, TypeVar

from pysyncobj import FAIL_REASON

from chunkraft.controller.raft.log import ProposalError

__all__ = ["FAIL_REASONS", "settle"]

T = TypeVar("T")

FAIL_REASONS = {
    value: name for name, value in vars(FAIL_REASON).items() if not name.startswith("_")
}
"""pysyncobj's failure codes by value, for messages (``NOT_LEADER``, ``REQUEST_DENIED``...)."""


def settle(future: Future[T], result: Any, error: int) -> None:
    """Settles ``future`` with pysyncobj's answer: its result on SUCCESS, else ProposalError
    naming the failure (the outcome is unknown, see ProposalError). A future already settled is
    left as it is; callable from any thread."""
    if future.done():
        return
    if error == FAIL_REASON.SUCCESS:
        future.set_result(result)
    else:
        future.set_exception(ProposalError(FAIL_REASONS.get(error, str(error))))
