"""Where replicas go: Kafka's striped, rack-aware placer, and the checks of a manual assignment.

The placer follows Kafka's ``StripedReplicaPlacer`` over the *usable* brokers (registered,
unfenced, not in controlled shutdown): racks are visited round robin from a starting rack that
advances by one per partition, brokers inside a rack round robin too, so

- no broker holds two replicas of one partition (a hard constraint);
- replicas of a partition land on distinct racks while there are racks left;
- leaders (first replicas) spread over racks and brokers.

After as many partitions as there are brokers, racks and brokers are shuffled so that follower
sets do not repeat. All randomness comes from ``random.Random(seed)``: the same brokers and seed
always give the same placement, which is what tests and replays of an operation need. Unlike
Kafka, fenced brokers are never used, not even as followers: a new partition should start fully
in sync.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from chunkraft.controller.image import MetadataImage
from chunkraft.error_codes import ApiException, Errors

__all__ = [
    "StripedReplicaPlacer",
    "UsableBroker",
    "check_brokers_usable",
    "place_replicas",
    "usable_brokers",
    "validate_manual_assignment",
]


@dataclass(frozen=True, slots=True)
class UsableBroker:
    """A broker that may receive new replicas, and its rack (None: no rack). Immutable."""

    broker_id: int
    rack: str | None = None


def usable_brokers(image: MetadataImage) -> list[UsableBroker]:
    """The registered brokers that are unfenced and not in controlled shutdown, by id."""
    return [
        UsableBroker(b.broker_id, b.rack)
        for b in image.brokers
        if not b.fenced and not b.in_controlled_shutdown
    ]


class _BrokerList:
    """The brokers of one rack, handed out round robin once each per generation."""

    __slots__ = ("brokers", "generation", "index", "offset")

    def __init__(self, brokers: list[int], rng: random.Random) -> None:
        self.brokers = sorted(brokers)
        self.offset = rng.randrange(len(self.brokers))
        self.index = 0
        self.generation = 0

    def next(self, generation: int) -> int:
        """The next broker of this generation, or -1 once every broker was handed out."""
        size = len(self.brokers)
        if self.generation != generation:
            self.generation = generation
            self.index = 0
            self.offset = (self.offset + 1) % size
        if self.index >= size:
            return -1
        broker = self.brokers[(self.index + self.offset) % size]
        self.index += 1
        return broker


class StripedReplicaPlacer:
    """Places the replicas of one partition after another (Kafka's striped pattern).

    Each call to :meth:`place` starts a new *generation*, in which every broker list restarts,
    so the replicas of one partition are distinct brokers. Kafka resets its iteration epoch to 0
    on a shuffle, which can leave a rack list that last saw epoch 0 exhausted; a generation that
    only ever grows avoids that. Not thread-safe: one placement at a time.
    """

    def __init__(self, brokers: Iterable[UsableBroker], seed: int | str) -> None:
        self._rng = random.Random(seed)
        by_rack: dict[str | None, list[int]] = {}
        for broker in brokers:
            by_rack.setdefault(broker.rack, []).append(broker.broker_id)
        self._rack_names: list[str | None] = sorted(by_rack, key=_rack_order)
        self._racks = {name: _BrokerList(by_rack[name], self._rng) for name in self._rack_names}
        self._broker_count = sum(len(ids) for ids in by_rack.values())
        self._offset = self._rng.randrange(len(self._rack_names)) if self._rack_names else 0
        self._placed_since_shuffle = 0
        self._generation = 0

    @property
    def broker_count(self) -> int:
        """How many brokers the placer may use."""
        return self._broker_count

    def place(self, replication_factor: int) -> tuple[int, ...]:
        """The replicas of the next partition, leader first.

        Raises ApiException(INVALID_REPLICATION_FACTOR) if the factor is not positive or larger
        than the number of usable brokers.
        """
        if replication_factor <= 0:
            raise Errors.INVALID_REPLICATION_FACTOR.exception(
                f"Invalid replication factor {replication_factor}: the replication factor "
                "must be positive."
            )
        if replication_factor > self._broker_count:
            raise Errors.INVALID_REPLICATION_FACTOR.exception(
                f"The target replication factor of {replication_factor} cannot be reached "
                f"because only {self._broker_count} broker(s) are registered."
            )
        if self._placed_since_shuffle == self._broker_count and self._broker_count > 1:
            self._shuffle()
            self._placed_since_shuffle = 0
        rack_count = len(self._rack_names)
        if self._offset >= rack_count:
            self._offset = 0
        self._generation += 1
        generation = self._generation
        replicas: list[int] = []
        # The leader: the first rack, from the offset on, with a broker left.
        first_rack = self._offset
        while True:
            leader = self._racks[self._rack_names[first_rack]].next(generation)
            if leader >= 0:
                replicas.append(leader)
                break
            first_rack = (first_rack + 1) % rack_count
        # Followers: racks round robin from the offset, skipping the leader's rack once.
        rack_index = self._offset
        skip = first_rack
        while len(replicas) < replication_factor:
            result = -1
            while result < 0:
                if rack_index == skip:
                    skip = -1
                else:
                    result = self._racks[self._rack_names[rack_index]].next(generation)
                rack_index = (rack_index + 1) % rack_count
            replicas.append(result)
        self._placed_since_shuffle += 1
        self._offset += 1
        return tuple(replicas)

    def _shuffle(self) -> None:
        self._rng.shuffle(self._rack_names)
        for name in sorted(self._racks, key=_rack_order):
            self._rng.shuffle(self._racks[name].brokers)


def _rack_order(rack: str | None) -> tuple[bool, str]:
    return (rack is not None, rack or "")


def place_replicas(
    image: MetadataImage,
    num_partitions: int,
    replication_factor: int,
    seed: int | str,
) -> list[tuple[int, ...]]:
    """Replicas for ``num_partitions`` new partitions over the image's usable brokers.

    Deterministic for a given image and ``seed``. Raises ApiException(INVALID_REPLICATION_FACTOR)
    with Kafka's message, "Unable to replicate the partition N time(s): ...", when the factor is
    not positive, every broker is fenced, or there are fewer usable brokers than the factor.
    """
    prefix = f"Unable to replicate the partition {replication_factor} time(s): "
    brokers = usable_brokers(image)
    if replication_factor <= 0:
        raise Errors.INVALID_REPLICATION_FACTOR.exception(
            f"{prefix}Invalid replication factor {replication_factor}: the replication factor "
            "must be positive."
        )
    registered = len(image.brokers)
    if not brokers and registered:
        raise Errors.INVALID_REPLICATION_FACTOR.exception(
            f"{prefix}All brokers are currently fenced or in controlled shutdown."
        )
    if replication_factor > len(brokers):
        unavailable = registered - len(brokers)
        detail = (
            f"only {len(brokers)} broker(s) are registered."
            if not unavailable
            else f"only {len(brokers)} broker(s) are registered and usable "
            f"({unavailable} more are fenced or in controlled shutdown)."
        )
        raise Errors.INVALID_REPLICATION_FACTOR.exception(
            f"{prefix}The target replication factor of {replication_factor} cannot be reached "
            f"because {detail}"
        )
    placer = StripedReplicaPlacer(brokers, seed)
    return [placer.place(replication_factor) for _ in range(num_partitions)]


def validate_manual_assignment(
    image: MetadataImage, broker_ids: Sequence[int], subject: str
) -> None:
    """Kafka's checks of a manual replica list, in Kafka's order and words.

    ``subject`` names the list in messages ("manual partition assignment", "chunk
    assignment", ...). Raises ApiException(INVALID_REPLICA_ASSIGNMENT) if the list is empty,
    names an unregistered broker, or names a broker twice (checked in broker id order, as
    Kafka does). The replica count and broker health are the caller's next checks.
    """
    if not broker_ids:
        raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
            f"The {subject} includes an empty replica list."
        )
    previous: int | None = None
    for broker_id in sorted(broker_ids):
        if image.brokers.get(broker_id) is None:
            raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
                f"The {subject} includes broker {broker_id}, but no such broker is registered."
            )
        if broker_id == previous:
            raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
                f"The {subject} includes the broker {broker_id} more than once."
            )
        previous = broker_id


def check_brokers_usable(image: MetadataImage, broker_ids: Sequence[int], subject: str) -> None:
    """Raises ApiException(INVALID_REPLICA_ASSIGNMENT) naming the first broker of
    ``broker_ids`` (registered ones, in list order) that is fenced or in controlled shutdown.
    """
    for broker_id in broker_ids:
        registration = image.brokers.get(broker_id)
        if registration is None:
            raise ApiException(
                Errors.INVALID_REPLICA_ASSIGNMENT,
                f"The {subject} includes broker {broker_id}, but no such broker is registered.",
            )
        if registration.fenced:
            raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
                f"The {subject} includes broker {broker_id}, which is fenced."
            )
        if registration.in_controlled_shutdown:
            raise Errors.INVALID_REPLICA_ASSIGNMENT.exception(
                f"The {subject} includes broker {broker_id}, which is in controlled shutdown."
            )
