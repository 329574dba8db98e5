"""The error codes older transaction API versions answer (chunkraft.kafka.txn.compat)."""

from __future__ import annotations

import pytest

from chunkraft.error_codes import Errors
from chunkraft.kafka.txn.compat import fenced_for_version, txn_offset_commit_code

FENCED = Errors.PRODUCER_FENCED.code
OLD_EPOCH = Errors.INVALID_PRODUCER_EPOCH.code


@pytest.mark.parametrize(("version", "expected"), [(0, OLD_EPOCH), (1, OLD_EPOCH),
                                                   (2, FENCED), (3, FENCED)])
def test_producer_fenced_is_invalid_producer_epoch_before_the_version_that_knows_it(
        version: int, expected: int) -> None:
    assert fenced_for_version(FENCED, version, 2) == expected


@pytest.mark.parametrize("error", [Errors.NONE, Errors.CONCURRENT_TRANSACTIONS,
                                   Errors.INVALID_PRODUCER_EPOCH, Errors.NOT_COORDINATOR])
def test_other_codes_pass_at_every_version(error: Errors) -> None:
    assert {fenced_for_version(error.code, version, 4) for version in range(6)} == {error.code}


@pytest.mark.parametrize("version", range(4))
def test_txn_offset_commit_never_answers_producer_fenced(version: int) -> None:
    assert txn_offset_commit_code(FENCED, version) == OLD_EPOCH


def test_txn_offset_commit_before_v2_answers_loading_as_not_available() -> None:
    loading = Errors.COORDINATOR_LOAD_IN_PROGRESS.code
    assert [txn_offset_commit_code(loading, v) for v in range(4)] == [
        Errors.COORDINATOR_NOT_AVAILABLE.code] * 2 + [loading] * 2
    assert txn_offset_commit_code(Errors.NOT_COORDINATOR.code, 0) == Errors.NOT_COORDINATOR.code
