"""The producer's calls to the transaction and group coordinators (KIP-98).

InitProducerId for a ``transactional_id``, AddPartitionsToTxn, AddOffsetsToTxn with
TxnOffsetCommit, and EndTxn, each on the sender's event loop; a fencing error makes the producer
unusable (:class:`ProducerFencedError`), any other a :class:`TransactionError`.
"""

from __future__ import annotations

import time

from chunkraft.client.producer_batches import ProducerFencedError, TransactionError
from chunkraft.client.producer_core import FENCED, ProducerCore, TxnState
from chunkraft.error_codes import Errors
from chunkraft.protocol.coordinators import (
    GROUP_KEY,
    TRANSACTION_KEY,
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
    EndTxnRequest,
    EndTxnResponse,
    OffsetCommitPartition,
    OffsetCommitTopic,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from chunkraft.protocol.data_plane import InitProducerIdRequest, InitProducerIdResponse

__all__ = ["ProducerTransactions"]


class ProducerTransactions(ProducerCore):
    """:class:`ProducerCore` plus the coordinator calls of a transactional producer; they run
    on the sender's loop (the public transaction methods of :class:`Producer` wait for them)."""

    def _need_txn(self, states: tuple[TxnState, ...], operation: str) -> None:
        if self._txn is TxnState.NONE:
            raise TransactionError(f"{operation} needs a transactional_id")
        if self._fatal is not None:
            raise ProducerFencedError(f"{operation}: the producer failed: {self._fatal}")
        if self._txn not in states:
            raise TransactionError(f"{operation} is not allowed in state {self._txn.value}",
                                   Errors.INVALID_TXN_STATE)

    def _txn_id(self) -> str:
        assert self.transactional_id is not None
        return self.transactional_id

    def _raise_txn_error(self, operation: str, error: Errors, message: str | None) -> None:
        if error is Errors.NONE:
            return
        text = f"{operation}: {message or error.name}"
        if error in FENCED:
            self._fatal = ProducerFencedError(text, error)
            self._txn = TxnState.FATAL
            raise self._fatal
        raise TransactionError(text, error)

    async def _init_transactional_id(self) -> None:
        deadline = time.monotonic() + self.max_block
        answer = await self._rpc.coordinator_call(
            TRANSACTION_KEY, self._txn_id(), self.metadata.candidate_urls, "init-producer-id",
            InitProducerIdRequest(transactional_id=self._txn_id(),
                                  transaction_timeout_ms=self.transaction_timeout_ms,
                                  producer_id=self._producer_id,
                                  producer_epoch=self._producer_epoch),
            InitProducerIdResponse, lambda a: Errors.for_code(a.error_code), deadline)
        self._raise_txn_error("init_transactions", Errors.for_code(answer.error_code),
                              answer.error_message)
        self._set_producer(answer.producer_id, answer.producer_epoch)

    def _set_producer(self, producer_id: int, epoch: int) -> None:
        self._producer_id, self._producer_epoch = producer_id, epoch
        for state in self._states.values():  # a new id or epoch starts every sequence at 0
            state.next_sequence = state.acked_sequence = 0
            state.known = False

    async def _add_partitions(self, keys: set[tuple[str, int]]) -> None:
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(keys):
            topics.setdefault(topic, []).append(partition)
        request = AddPartitionsToTxnRequest(
            transactional_id=self._txn_id(), producer_id=self._producer_id,
            producer_epoch=self._producer_epoch, topics=tuple(
                AddPartitionsToTxnTopic(name=name, partitions=tuple(parts))
                for name, parts in topics.items()))

        def error_of(answer: AddPartitionsToTxnResponse) -> Errors:
            if answer.error_code:
                return Errors.for_code(answer.error_code)
            codes = [Errors.for_code(r.error_code) for t in answer.results for r in t.results
                     if r.error_code]
            return next((c for c in codes if c.retriable), codes[0] if codes else Errors.NONE)

        answer = await self._rpc.coordinator_call(
            TRANSACTION_KEY, self._txn_id(), self.metadata.candidate_urls,
            "add-partitions-to-txn", request, AddPartitionsToTxnResponse, error_of,
            time.monotonic() + self.delivery_timeout)
        error = error_of(answer)
        if error is Errors.NONE:
            self._txn_partitions.update(keys)
            return
        message = answer.error_message or next(
            (r.error_message for t in answer.results for r in t.results if r.error_message),
            None)
        self._raise_txn_error("add-partitions-to-txn", error, message)

    async def _send_offsets(self, offsets: dict[tuple[str, int], int], group_id: str) -> None:
        deadline = time.monotonic() + self.delivery_timeout
        added = await self._rpc.coordinator_call(
            TRANSACTION_KEY, self._txn_id(), self.metadata.candidate_urls,
            "add-offsets-to-txn", AddOffsetsToTxnRequest(
                transactional_id=self._txn_id(), producer_id=self._producer_id,
                producer_epoch=self._producer_epoch, group_id=group_id),
            AddOffsetsToTxnResponse, lambda a: Errors.for_code(a.error_code), deadline)
        self._raise_txn_error("add-offsets-to-txn", Errors.for_code(added.error_code),
                              added.error_message)
        self._txn_offsets = True
        topics: dict[str, list[OffsetCommitPartition]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            topics.setdefault(topic, []).append(OffsetCommitPartition(
                partition_index=partition, committed_offset=offset))
        request = TxnOffsetCommitRequest(
            transactional_id=self._txn_id(), group_id=group_id, producer_id=self._producer_id,
            producer_epoch=self._producer_epoch, topics=tuple(
                OffsetCommitTopic(name=name, partitions=tuple(parts))
                for name, parts in topics.items()))

        def error_of(answer: TxnOffsetCommitResponse) -> Errors:
            codes = [Errors.for_code(p.error_code) for t in answer.topics for p in t.partitions
                     if p.error_code]
            return next((c for c in codes if c.retriable), codes[0] if codes else Errors.NONE)

        committed = await self._rpc.coordinator_call(
            GROUP_KEY, group_id, self.metadata.candidate_urls, "txn-offset-commit", request,
            TxnOffsetCommitResponse, error_of, deadline)
        self._raise_txn_error("txn-offset-commit", error_of(committed), None)

    async def _end_txn(self, *, committed: bool) -> None:
        if not self._txn_partitions and not self._txn_offsets:
            return  # nothing joined the transaction: the coordinator has nothing to end
        answer = await self._rpc.coordinator_call(
            TRANSACTION_KEY, self._txn_id(), self.metadata.candidate_urls, "end-txn",
            EndTxnRequest(transactional_id=self._txn_id(), producer_id=self._producer_id,
                          producer_epoch=self._producer_epoch, committed=committed),
            EndTxnResponse, lambda a: Errors.for_code(a.error_code),
            time.monotonic() + self.delivery_timeout)
        self._raise_txn_error("commit_transaction" if committed else "abort_transaction",
                              Errors.for_code(answer.error_code), answer.error_message)
        self._txn_partitions.clear()
        self._txn_offsets = False
