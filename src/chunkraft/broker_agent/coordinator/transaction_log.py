"""The transaction coordinator's state and its encoding in ``__transaction_state``.

Each state change of a transactional id is one record in its partition of
``__transaction_state``, written by the partition's leader (the coordinator) with acks=all:

- key: the UTF-8 JSON ``{"type": "txn", "id": <transactional id>}``;
- value: the UTF-8 JSON of :class:`TxnMetadata` (``producer_id``, ``producer_epoch``,
  ``timeout_ms``, ``state`` (the :class:`TxnState` name), ``partitions`` as ``[[topic,
  index], ...]``, ``txn_start_ms``, ``update_ms``).

The last record of an id is its state: loading replays the partition in order (Kafka's
transaction log, with JSON instead of Kafka's binary schema; never pickle).
"""

from __future__ import annotations

import enum
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from chunkraft.dataplane.record_batch import build_batch, decode_records, iter_batches

if TYPE_CHECKING:
    from chunkraft.broker_agent.storage import UnifiedLog

__all__ = [
    "RECORD_TYPE",
    "TopicPartition",
    "TxnMetadata",
    "TxnState",
    "decode_key",
    "decode_value",
    "encode_record",
    "read_states",
]

RECORD_TYPE = "txn"
READ_CHUNK_BYTES = 1024 * 1024

TopicPartition = tuple[str, int]


class TxnState(enum.Enum):
    """Kafka's ``TransactionState`` (without DEAD: ids are never expired here)."""

    EMPTY = "EMPTY"
    ONGOING = "ONGOING"
    PREPARE_COMMIT = "PREPARE_COMMIT"
    PREPARE_ABORT = "PREPARE_ABORT"
    COMPLETE_COMMIT = "COMPLETE_COMMIT"
    COMPLETE_ABORT = "COMPLETE_ABORT"

    @property
    def is_prepare(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

    @property
    def is_complete(self) -> bool:
        return self in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, TxnState.EMPTY)


@dataclass(frozen=True)
class TxnMetadata:
    """One transactional id's durable state; immutable (a change is a new value)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    txn_start_ms: int = -1
    update_ms: int = 0

    def but(self, **changes: Any) -> TxnMetadata:
        """A copy with ``changes`` and ``update_ms`` now (unless given)."""
        changes.setdefault("update_ms", int(time.time() * 1000))
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return {"producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
                "timeout_ms": self.timeout_ms, "state": self.state.value,
                "partitions": sorted([t, p] for t, p in self.partitions),
                "txn_start_ms": self.txn_start_ms, "update_ms": self.update_ms}


def encode_key(transactional_id: str) -> bytes:
    return json.dumps({"type": RECORD_TYPE, "id": transactional_id},
                      separators=(",", ":")).encode()


def decode_key(key: bytes | None) -> str | None:
    """The transactional id of a record key, None for anything else (skipped on load)."""
    if key is None:
        return None
    try:
        data = json.loads(key)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("type") != RECORD_TYPE:
        return None
    ident = data.get("id")
    return ident if isinstance(ident, str) else None


def decode_value(transactional_id: str, value: bytes) -> TxnMetadata:
    """Raises ValueError (or KeyError / TypeError) for a value that is not a state."""
    data = json.loads(value)
    return TxnMetadata(
        transactional_id=transactional_id, producer_id=int(data["producer_id"]),
        producer_epoch=int(data["producer_epoch"]), timeout_ms=int(data["timeout_ms"]),
        state=TxnState(data["state"]),
        partitions=frozenset((str(t), int(p)) for t, p in data["partitions"]),
        txn_start_ms=int(data["txn_start_ms"]), update_ms=int(data["update_ms"]))


def encode_record(metadata: TxnMetadata, now_ms: int) -> bytes:
    """One record batch holding ``metadata`` (non-idempotent: the coordinator writes each
    state once and retries nothing)."""
    value = json.dumps(metadata.to_json(), separators=(",", ":")).encode()
    return build_batch([(encode_key(metadata.transactional_id), value, now_ms)])


def read_states(log_: UnifiedLog, upper: int) -> Iterator[TxnMetadata]:
    """Every state record of ``log_`` from its start below offset ``upper``, in log order.
    A record that does not decode is skipped (a newer version's, or damage)."""
    offset = log_.log_start_offset
    while offset < upper:
        result = log_.read(offset, READ_CHUNK_BYTES, upper)
        data = bytes(result.records)
        if not data:
            return
        next_offset = offset
        for header, view in iter_batches(data):
            next_offset = max(next_offset, header.last_offset + 1)
            if header.is_control:
                continue
            for record in decode_records(view):
                if record.offset < offset:
                    continue
                ident = decode_key(record.key)
                if ident is None or record.value is None:
                    continue
                try:
                    yield decode_value(ident, record.value)
                except (ValueError, KeyError, TypeError):
                    continue
        if next_offset <= offset:
            return
        offset = next_offset
