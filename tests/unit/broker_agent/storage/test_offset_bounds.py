"""A log's offsets end at 2^63 - 2 (its end offset must still be an int64): an append that
would pass it is refused OFFSET_OUT_OF_RANGE and writes nothing (unchecked, a cut at 2^63 - 1
would make the next produce fail with a struct.error)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkraft.dataplane.record_batch import MAX_OFFSET, build_batch, rewrite_base
from chunkraft.error_codes import ApiException, Errors
from chunkraft.errors import CorruptBatchError
from tests.unit.broker_agent.storage.log_support import batch, open_log


def test_the_last_offset_a_log_stores_is_max_offset_minus_one(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.truncate_fully_and_start_at(MAX_OFFSET - 1)
    info = log.append_as_leader(batch(1), 0)
    assert (info.first_offset, info.last_offset) == (MAX_OFFSET - 1, MAX_OFFSET - 1)
    assert log.log_end_offset == MAX_OFFSET
    with pytest.raises(ApiException) as refused:
        log.append_as_leader(batch(1), 0)
    assert refused.value.error is Errors.OFFSET_OUT_OF_RANGE
    assert "2^63 - 2" in refused.value.message
    assert log.log_end_offset == MAX_OFFSET  # nothing written


@pytest.mark.parametrize("start", [MAX_OFFSET, MAX_OFFSET - 2])
def test_a_batch_that_would_pass_the_end_is_refused_whole(tmp_path: Path, start: int) -> None:
    log = open_log(tmp_path)
    log.truncate_fully_and_start_at(start)
    with pytest.raises(ApiException) as refused:
        log.append_as_leader(batch(3), 0)
    assert refused.value.error is Errors.OFFSET_OUT_OF_RANGE
    assert log.log_end_offset == start


def test_a_marker_and_a_follower_batch_past_the_end_are_refused(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.truncate_fully_and_start_at(MAX_OFFSET)
    with pytest.raises(ApiException) as marker:
        log.append_control(True, 7, 0, 0, 0, 10_000)
    assert marker.value.error is Errors.OFFSET_OUT_OF_RANGE
    follower = open_log(tmp_path / "f")
    follower.truncate_fully_and_start_at(MAX_OFFSET - 1)
    data = bytearray(build_batch([(b"k", b"v", 1), (b"k", b"v", 2)]))
    rewrite_base(data, MAX_OFFSET - 1, 0)  # its last offset would be 2^63
    with pytest.raises(ApiException) as copied:
        follower.append_as_follower(bytes(data))
    assert copied.value.error is Errors.OFFSET_OUT_OF_RANGE


def test_rewrite_base_refuses_an_offset_no_int64_holds() -> None:
    data = bytearray(build_batch([(b"k", b"v", 1)]))
    with pytest.raises(CorruptBatchError):
        rewrite_base(data, MAX_OFFSET + 1, 0)
    with pytest.raises(CorruptBatchError):
        rewrite_base(data, -1, 0)
