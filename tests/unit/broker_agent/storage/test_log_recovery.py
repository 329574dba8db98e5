"""Opening a log (``storage.log_recovery``): recovery of torn and corrupt tails, replays."""

import uuid
from pathlib import Path

import pytest

from chunkraft.broker_agent.storage import (
    AbortedTransaction,
    DuplicateSequenceError,
    InconsistentTopicIdError,
    UnifiedLog,
)
from tests.unit.broker_agent.storage.log_support import SMALL, batch, fill, offsets, open_log


def test_producer_state_rebuilt_without_snapshot(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    log.append_as_leader(batch(3, producer_id=7, producer_epoch=0, base_sequence=0), 0)
    log.flush()
    for snap in (tmp_path / "t-0").glob("*.snapshot"):
        snap.unlink()
    again = open_log(tmp_path)
    with pytest.raises(DuplicateSequenceError):
        again.append_as_leader(batch(3, producer_id=7, producer_epoch=0, base_sequence=0), 0)


def test_aborted_index_rebuilt_after_crash(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    txn = {"producer_id": 5, "producer_epoch": 1, "transactional": True}
    log.append_as_leader(batch(2, base_sequence=0, **txn), 0)
    log.append_control(False, 5, 1, 0, 0)
    log.close_files()  # a crash: nothing flushed, no snapshot, no index files
    again = open_log(tmp_path)
    assert again.aborted_transactions(0, 3) == [AbortedTransaction(5, 0)]


def test_recovery_cuts_torn_tail(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 5)
    log.close()
    seg = tmp_path / "t-0" / f"{0:020d}.log"
    size = seg.stat().st_size
    with seg.open("r+b") as f:
        f.truncate(size - 10)
    again = open_log(tmp_path)
    assert again.log_end_offset == 12
    assert offsets(again.read(0, 10**6, 10**9).records) == list(range(12))


def test_recovery_cuts_garbage_and_bit_flips(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 5)
    log.close_files()  # crash before any flush: everything is checked
    seg = tmp_path / "t-0" / f"{0:020d}.log"
    with seg.open("ab") as f:
        f.write(b"\xff" * 100)
    assert open_log(tmp_path).log_end_offset == 15
    data = bytearray(seg.read_bytes())
    last = len(batch(3))
    data[len(data) - last + 70] ^= 0x10  # flip a bit inside the last batch's records
    seg.write_bytes(bytes(data))
    (tmp_path / "t-0" / "recovery-point").unlink()
    again = open_log(tmp_path)
    assert again.log_end_offset == 12


def test_recovery_deletes_segments_after_a_corrupt_one(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 60)
    segs = log.segments
    assert len(segs) >= 3
    log.close_files()
    (tmp_path / "t-0" / "recovery-point").write_text("0\n")
    first = tmp_path / "t-0" / f"{0:020d}.log"
    data = bytearray(first.read_bytes())
    data[-20] ^= 1
    first.write_bytes(bytes(data))
    again = open_log(tmp_path)
    assert len(again.segments) == 1
    assert again.log_end_offset == segs[0].next_offset - 3


def test_wrong_topic_id_is_refused(tmp_path: Path) -> None:
    open_log(tmp_path).close()
    with pytest.raises(InconsistentTopicIdError):
        UnifiedLog.open(tmp_path / "t-0", uuid.uuid4(), SMALL)


def test_bit_flip_in_last_batch_cut_even_after_clean_close(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 30)
    leo = log.log_end_offset
    log.close()
    seg = tmp_path / "t-0" / f"{log.segments[-1].base_offset:020d}.log"
    data = bytearray(seg.read_bytes())
    data[-30] ^= 0x01
    seg.write_bytes(bytes(data))
    assert open_log(tmp_path).log_end_offset == leo - 3


def test_damaged_base_offset_outside_the_crc_is_cut(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    fill(log, 4)
    log.close_files()
    seg = tmp_path / "t-0" / f"{0:020d}.log"
    data = bytearray(seg.read_bytes())
    size = len(batch(3))
    data[3 * size + 7] ^= 0x40  # base offset of the last batch: 9 -> 73
    seg.write_bytes(bytes(data))
    assert open_log(tmp_path).log_end_offset == 9
