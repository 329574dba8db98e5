"""The transaction state records: JSON key and value, decoded back the same."""

from __future__ import annotations

from chunkraft.broker_agent.coordinator.transaction_log import (
    TxnMetadata,
    TxnState,
    decode_key,
    decode_value,
    encode_key,
    encode_record,
)
from chunkraft.dataplane.record_batch import decode_records, iter_batches


def test_a_state_round_trips_through_a_record() -> None:
    state = TxnMetadata("tx-1", 42, 3, 60_000, TxnState.PREPARE_COMMIT,
                        frozenset({("orders", 1), ("__consumer_offsets", 0)}), 1000, 2000)
    batch = encode_record(state, 5000)
    [(header, view)] = list(iter_batches(batch))
    [record] = decode_records(view)
    assert not header.is_transactional and record.key == encode_key("tx-1")
    assert decode_key(record.key) == "tx-1"
    assert record.value is not None and decode_value("tx-1", record.value) == state


def test_foreign_keys_are_skipped() -> None:
    assert decode_key(None) is None
    assert decode_key(b"not json") is None
    assert decode_key(b'{"type": "group", "id": "g"}') is None
