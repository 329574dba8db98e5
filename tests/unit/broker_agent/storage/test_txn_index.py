from pathlib import Path

from chunkraft.broker_agent.storage.txn_index import AbortedTxn, TxnIndex


def test_collect_truncate_and_persist(tmp_path: Path) -> None:
    p = tmp_path / "s.txnindex"
    idx = TxnIndex(p)
    idx.flush()
    assert not p.exists()  # no aborted transaction, no file
    idx.append(AbortedTxn(7, 0, 10))
    idx.append(AbortedTxn(8, 5, 20))
    assert idx.collect(11, 30) == [AbortedTxn(8, 5, 20)]
    assert idx.collect(0, 5) == [AbortedTxn(7, 0, 10)]
    assert idx.collect(21, 30) == []
    idx.flush()
    idx.truncate_to_offset(20)
    idx.flush()
    assert TxnIndex(p).entries == [AbortedTxn(7, 0, 10)]
