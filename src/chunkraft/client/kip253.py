"""KIP-253 read ordering for partitions created by an expansion (pure state, no I/O).

When createPartitions grows a topic, a key may move from an old partition to a new one. Its
older records are on the old ("prior") partition, up to the offset where the prior partition's
leader epoch was bumped by the expansion. A new partition's metadata lists each prior
partition with its leader epoch *before* the bump (``prior_partition_epochs``); the end offset
of that epoch on the prior partition (OffsetsForLeaderEpoch) is the threshold: every record
below it was produced before the expansion. A consumer starting the new partition at offset 0
waits until the offsets consumed on every prior partition (the group's committed offsets, or
this consumer's own positions when it reads the prior partitions itself) reached the
thresholds; then each key's records are read in the order they were produced.

:class:`ExpansionGate` holds that state for one new partition; the consumer resolves the
thresholds (``needs``, ``set_threshold``) and asks ``open(reached)`` each round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

__all__ = ["ExpansionGate", "gate_for"]


class ExpansionGate:
    """Whether the new partition ``(topic, partition)`` may be read yet.

    ``epochs`` maps each prior partition to its leader epoch before the expansion. Thresholds
    are unknown until :meth:`set_threshold`; once :meth:`open` answered True it stays open.
    Not thread-safe (one consumer's state).
    """

    def __init__(self, topic: str, partition: int, epochs: Mapping[int, int]) -> None:
        self.topic = topic
        self.partition = partition
        self.epochs = dict(epochs)
        self.thresholds: dict[int, int] = {}
        self._open = not self.epochs

    @property
    def is_open(self) -> bool:
        return self._open

    def needs(self) -> dict[int, int]:
        """Prior partitions whose threshold is still unknown, with the epoch to ask about."""
        return {p: e for p, e in self.epochs.items() if p not in self.thresholds}

    def set_threshold(self, prior_partition: int, end_offset: int) -> None:
        """The end offset of the prior partition's pre-expansion epoch (negative: nothing to
        wait for, e.g. the epoch is unknown to the prior partition's leader)."""
        self.thresholds[prior_partition] = max(end_offset, 0)

    def pending(self, reached: Callable[[int], int | None]) -> dict[int, int]:
        """Prior partitions not yet consumed to their threshold: partition -> threshold.
        ``reached(p)`` is the offset consumed on prior partition p (None: unknown, counts as
        not reached unless the threshold is 0)."""
        out: dict[int, int] = {}
        for prior in self.epochs:
            threshold = self.thresholds.get(prior)
            if threshold is None:
                out[prior] = -1
                continue
            if threshold == 0:
                continue
            offset = reached(prior)
            if offset is None or offset < threshold:
                out[prior] = threshold
        return out

    def open(self, reached: Callable[[int], int | None]) -> bool:
        """True once every prior partition reached its threshold (and from then on)."""
        if not self._open and not self.pending(reached):
            self._open = True
        return self._open


def gate_for(topic: str, partition: int, prior_partition_epochs: Iterable[tuple[int, int]]
             ) -> ExpansionGate | None:
    """The gate of a partition created by an expansion (``prior_partition_epochs``: its
    (prior partition, leader epoch) pairs), None for any other partition."""
    epochs = dict(prior_partition_epochs)
    return ExpansionGate(topic, partition, epochs) if epochs else None
