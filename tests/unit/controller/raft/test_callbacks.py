"""controller/raft/callbacks: pysyncobj's (result, error) settles a future once."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from pysyncobj import FAIL_REASON

from chunkraft.controller.raft.callbacks import settle
from chunkraft.controller.raft.log import ProposalError


def test_success_gives_the_result_and_a_failure_names_its_reason() -> None:
    done: Future[str] = Future()
    settle(done, "outcome", FAIL_REASON.SUCCESS)
    settle(done, "later", FAIL_REASON.LEADER_CHANGED)  # already settled: unchanged
    assert done.result(0) == "outcome"
    failed: Future[str] = Future()
    settle(failed, None, FAIL_REASON.LEADER_CHANGED)
    with pytest.raises(ProposalError, match="LEADER_CHANGED") as raised:
        failed.result(0)
    assert raised.value.reason == "LEADER_CHANGED"
