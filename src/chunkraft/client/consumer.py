"""Consumer: a chunk-aware, synchronous Kafka-style consumer over the brokers' data plane.

It reads every chunk of a partition where it lives (KIP-1114, :mod:`client.chunk_router`): an
inactive chunk from an in-sync replica chosen by the client id, the active chunk from its
leader, and reports which broker served each record (``ConsumerRecord.broker_id``). It may be
assigned whole partitions or key-hash ranges of one (the key-range fetch proposal: two
consumers with complementary ranges of a partition share it, each committing the offset of its
own ranges as ``range_offsets``), or subscribe to topics as a member of a group (the group
coordinator's JoinGroup / SyncGroup / Heartbeat; the member that leads assigns the partitions
round-robin). A partition created by an expansion is started at offset 0 only once the
offsets consumed on its prior partitions reached the KIP-253 thresholds (:mod:`client.kip253`),
so each key's records come out in the order they were produced.

Positions start at the group's committed offsets (range offsets for key ranges), else at
``auto_offset_reset``; an offset no chunk serves any more resets the same way.
Not thread-safe: one thread uses a consumer.

The consumer is built in layers, one module each, imported one way: ``consumer_core`` (state,
plumbing, assignment), ``consumer_offsets`` (positions, commits), ``consumer_membership`` (the
group, the KIP-253 gate); this module adds polling and closing.
"""

from __future__ import annotations

import time

from chunkraft.client.consumer_core import (
    MAX_WAIT_MS,
    MEMBERSHIP_ERRORS,
    ConsumerError,
    TopicPartition,
)
from chunkraft.client.consumer_fetcher import (
    ConsumerRecord,
    Outcome,
)
from chunkraft.client.consumer_group import GroupError
from chunkraft.client.consumer_membership import ConsumerMembership

__all__ = ["Consumer", "ConsumerError", "ConsumerRecord", "TopicPartition"]


class Consumer(ConsumerMembership):
    """See the module docstring. ``bootstrap``: broker URLs; ``token`` / ``verify``: the bearer
    token and TLS verification of every request. ``isolation_level`` "read_committed" hides
    aborted transactions and stops at the last stable offset. ``enable_auto_commit`` commits the
    positions every ``auto_commit_interval_ms`` during :meth:`poll` and at :meth:`close`.
    ``default_api_timeout_ms`` (Kafka's ``default.api.timeout.ms``, 60 s) bounds an offset
    lookup: a seek, a reset or a timestamp lookup retries with fresh metadata (a leader that
    moved or restarted) until it answers, and raises :class:`ConsumerError` naming the last
    failure only once that much time has passed.
    """

    def unsubscribe(self) -> None:
        self._leave()
        self._subscription = ()
        self._streams = {}

    # ------------------------------------------------------------------ poll

    def poll(self, timeout_ms: int = 1000) -> list[ConsumerRecord]:
        """Records of the assigned partitions (ranges), up to ``max_poll_records``, waiting
        up to ``timeout_ms`` for some. Records of one partition come in offset order."""
        if self._closed:
            raise ConsumerError("the consumer is closed")
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        if self.metadata.age == float("inf"):
            self._refresh(force=True)
        self._ensure_membership()
        if self.enable_auto_commit and self._group is not None and self._streams and \
                time.monotonic() - self._last_commit >= self.auto_commit_interval_s:
            self._auto_commit()
        self._ensure_membership()
        self._ensure_positions()
        out: list[ConsumerRecord] = []
        first = True
        while True:
            self._drain(out)
            if out or (not first and time.monotonic() >= deadline):
                return out
            left_ms = int((deadline - time.monotonic()) * 1000)
            wait = 0 if first else max(0, min(MAX_WAIT_MS, left_ms))
            first = False
            self._fetch_round(wait)
            self._drain(out)
            if out:
                return out
            if time.monotonic() >= deadline:
                return out

    def _auto_commit(self) -> None:
        """An automatic commit: a group that is rebalancing (or evicted us) refuses it; the
        rejoin that follows gives the partitions, and the next commit their positions."""
        try:
            self.commit()
        except GroupError as error:
            if error.error not in MEMBERSHIP_ERRORS and not error.error.retriable:
                raise
            self._last_commit = time.monotonic()

    def _drain(self, out: list[ConsumerRecord]) -> None:
        for stream in self._streams.values():
            while stream.buffer and len(out) < self.max_poll_records:
                out.append(stream.buffer.popleft())

    def _fetch_round(self, wait_ms: int) -> None:
        """One fetch per stream without buffered records (gated ones skipped)."""
        refresh = False
        for stream in list(self._streams.values()):
            if stream.buffer or stream.fetch_offset < 0 or not self._gate(stream):
                continue
            outcome = self._fetcher.fetch(stream, wait_ms)
            if outcome is Outcome.DATA:
                wait_ms = 0  # records in hand: the other streams must not keep them waiting
            elif outcome is Outcome.REFRESH:
                refresh = True
            elif outcome is Outcome.OUT_OF_RANGE:
                stream.out_of_range += 1
                refresh = True
                if stream.out_of_range >= 3:
                    # Still not served after fresh metadata: the records are gone (retention)
                    # or the position is past the end.
                    stream.out_of_range = 0
                    self._reset(stream)
        if refresh:
            self._refresh()
            time.sleep(0.02)

    # ------------------------------------------------------------------ closing

    def close(self) -> None:
        """Commits (with auto commit), leaves the group, closes every connection."""
        if self._closed:
            return
        try:
            if self.enable_auto_commit and self._group is not None and self._streams:
                self._auto_commit()
            self._leave()
        finally:
            self._closed = True
            for client in self._clients.values():
                client.close()
            if self._group is not None:
                self._group.close()
            if self._own_metadata:
                self.metadata.close()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
