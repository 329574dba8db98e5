from pathlib import Path

import pytest

from chunkraft.broker_agent.storage.errors import DuplicateSequenceError
from chunkraft.broker_agent.storage.producer_state import ProducerStateManager
from chunkraft.dataplane.record_batch import BatchHeader, build_batch, parse_header
from chunkraft.error_codes import ApiException, Errors


def header(pid: int, epoch: int, seq: int, n: int = 2, txn: bool = False) -> BatchHeader:
    data = build_batch(
        [(None, b"v", 1000)] * n,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=txn,
    )
    return parse_header(data)


def write(m: ProducerStateManager, h: BatchHeader, offset: int) -> None:
    s = m.begin(verify=True)
    s.check_duplicate(h)
    s.append_data(h, offset, offset + h.last_offset_delta)
    s.commit()


def test_sequences_in_order_duplicates_and_gaps(tmp_path: Path) -> None:
    m = ProducerStateManager(tmp_path)
    write(m, header(1, 0, 0), 0)
    write(m, header(1, 0, 2), 2)
    with pytest.raises(DuplicateSequenceError) as dup:
        write(m, header(1, 0, 0), 4)
    assert (dup.value.first_offset, dup.value.last_offset) == (0, 1)
    assert dup.value.code == Errors.DUPLICATE_SEQUENCE_NUMBER.code
    with pytest.raises(ApiException) as gap:
        write(m, header(1, 0, 7), 4)
    assert gap.value.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    entry = m.entries[1]
    assert entry.last_sequence == 3 and entry.last_data_offset == 3


def test_only_last_five_batches_are_remembered(tmp_path: Path) -> None:
    m = ProducerStateManager(tmp_path)
    for i in range(7):
        write(m, header(1, 0, 2 * i), 2 * i)
    assert len(m.entries[1].batches) == 5
    with pytest.raises(ApiException) as e:  # too old to recognise: out of order
        write(m, header(1, 0, 0), 20)
    assert e.value.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_epochs(tmp_path: Path) -> None:
    m = ProducerStateManager(tmp_path)
    write(m, header(1, 3, 0), 0)
    with pytest.raises(ApiException) as old:
        write(m, header(1, 2, 2), 2)
    assert old.value.error is Errors.INVALID_PRODUCER_EPOCH
    with pytest.raises(ApiException) as bad_start:
        write(m, header(1, 4, 5), 2)
    assert bad_start.value.error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    write(m, header(1, 4, 0), 2)
    assert m.entries[1].producer_epoch == 4 and len(m.entries[1].batches) == 1


def test_unknown_producer_may_start_anywhere(tmp_path: Path) -> None:
    m = ProducerStateManager(tmp_path)
    write(m, header(9, 0, 42), 0)
    assert m.entries[9].last_sequence == 43


def test_transactions_lso_and_markers(tmp_path: Path) -> None:
    m = ProducerStateManager(tmp_path)
    write(m, header(1, 0, 0, txn=True), 5)
    write(m, header(1, 0, 2, txn=True), 7)
    assert m.first_unstable_offset() == 5
    with pytest.raises(ApiException) as e:
        write(m, header(1, 0, 4), 9)
    assert e.value.error is Errors.INVALID_TXN_STATE
    s = m.begin(verify=True)
    txn = s.append_marker(1, 0, 3, False, 9, 2000)
    s.commit()
    assert (txn.first_offset, txn.last_offset, txn.is_aborted) == (5, 9, True)
    assert m.first_unstable_offset() == 5  # until the marker is below the high watermark
    m.on_high_watermark(10)
    assert m.first_unstable_offset() is None
    s = m.begin(verify=True)
    with pytest.raises(ApiException) as fenced:
        s.append_marker(1, 0, 2, True, 10, 2000)
    assert fenced.value.error is Errors.TRANSACTION_COORDINATOR_FENCED


def test_refused_append_leaves_no_trace(tmp_path: Path) -> None:
    m = ProducerStateManager(tmp_path)
    s = m.begin(verify=True)
    s.append_data(header(1, 0, 0), 0, 1)
    # never committed
    assert m.entries == {}


def test_snapshots_round_trip_and_trim(tmp_path: Path) -> None:
    m = ProducerStateManager(tmp_path)
    write(m, header(1, 0, 0, txn=True), 0)
    write(m, header(2, 5, 0), 2)
    for offset in (4, 10, 20, 30):
        m.take_snapshot(offset)
    assert m.snapshot_offsets() == [10, 20, 30]
    fresh = ProducerStateManager(tmp_path)
    assert fresh.load_snapshot(25) == 20
    assert fresh.snapshot_offsets() == [10, 20]  # the one above the log end is gone
    assert fresh.entries[2].producer_epoch == 5
    assert fresh.first_unstable_offset() == 0
    (tmp_path / f"{20:020d}.snapshot").write_text("0000\n{}")
    assert ProducerStateManager(tmp_path).load_snapshot(25) == 10  # corrupt one skipped


def test_expiry_keeps_open_transactions(tmp_path: Path) -> None:
    m = ProducerStateManager(tmp_path)
    write(m, header(1, 0, 0, txn=True), 0)
    write(m, header(2, 0, 0), 2)
    assert m.remove_expired(now_ms=10_000, expiration_ms=100) == 1
    assert list(m.entries) == [1]
