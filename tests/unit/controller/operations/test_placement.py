from __future__ import annotations

from collections import Counter

import pytest

from chunkraft.controller.image import MetadataImage
from chunkraft.controller.operations.placement import (
    StripedReplicaPlacer,
    UsableBroker,
    check_brokers_usable,
    place_replicas,
    usable_brokers,
    validate_manual_assignment,
)
from chunkraft.error_codes import ApiException, Errors
from tests.unit.controller.operations.topic_support import cluster

SIX_ON_THREE_RACKS = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}


def test_same_brokers_and_seed_give_the_same_placement() -> None:
    image = cluster(range(6), SIX_ON_THREE_RACKS)
    first = place_replicas(image, 30, 3, "seed")
    assert place_replicas(image, 30, 3, "seed") == first
    others = {tuple(place_replicas(image, 30, 3, seed)) for seed in range(10)}
    assert len(others) > 1  # the seed does choose


def test_no_broker_holds_two_replicas_of_a_partition() -> None:
    brokers = [UsableBroker(b, rack) for b, rack in
               {0: "a", 1: "a", 2: "a", 3: "b", 4: None, 5: "c", 6: "c"}.items()]
    for seed in range(20):
        placer = StripedReplicaPlacer(brokers, seed)
        for _ in range(50):
            replicas = placer.place(7)
            assert sorted(replicas) == list(range(7))


def test_replicas_of_a_partition_land_on_distinct_racks() -> None:
    image = cluster(range(6), SIX_ON_THREE_RACKS)
    for replicas in place_replicas(image, 60, 3, 7):
        assert len({SIX_ON_THREE_RACKS[b] for b in replicas}) == 3


def test_a_lone_broker_in_its_rack_is_in_every_partition_that_needs_two_racks() -> None:
    racks = {0: "small", 1: "big", 2: "big", 3: "big"}
    for replicas in place_replicas(cluster(range(4), racks), 40, 2, 3):
        assert 0 in replicas
        assert {racks[b] for b in replicas} == {"small", "big"}


def test_leaders_rotate_over_racks_and_spread_over_brokers() -> None:
    image = cluster(range(6), SIX_ON_THREE_RACKS)
    placements = place_replicas(image, 60, 3, 11)
    leaders = Counter(replicas[0] for replicas in placements)
    by_rack = Counter(SIX_ON_THREE_RACKS[b] for b in leaders.elements())
    # Racks take turns exactly: the starting rack advances by one per partition, and the shuffle
    # happens only after as many partitions as there are brokers (a multiple of three here).
    assert by_rack == {"a": 20, "b": 20, "c": 20}
    assert set(leaders) == set(range(6))
    assert max(leaders.values()) - min(leaders.values()) <= 4


def test_without_racks_every_broker_leads_in_turn() -> None:
    placements = place_replicas(cluster((0, 1, 2)), 3, 3, 0)
    assert sorted(replicas[0] for replicas in placements) == [0, 1, 2]
    for replicas in placements:
        assert sorted(replicas) == [0, 1, 2]


def test_fenced_and_shutting_down_brokers_get_no_replicas() -> None:
    image = cluster(range(5), fenced=(1,), shutdown=(3,))
    assert [b.broker_id for b in usable_brokers(image)] == [0, 2, 4]
    for replicas in place_replicas(image, 20, 2, 5):
        assert set(replicas) <= {0, 2, 4}


def _placement_error(image: MetadataImage, rf: int) -> ApiException:
    with pytest.raises(ApiException) as caught:
        place_replicas(image, 1, rf, 0)
    assert caught.value.error is Errors.INVALID_REPLICATION_FACTOR
    return caught.value


def test_too_few_brokers_is_kafkas_message() -> None:
    error = _placement_error(cluster((0, 1)), 3)
    assert error.message == (
        "Unable to replicate the partition 3 time(s): The target replication factor of 3 "
        "cannot be reached because only 2 broker(s) are registered."
    )
    empty = _placement_error(cluster(()), 1)
    assert empty.message.endswith("because only 0 broker(s) are registered.")


def test_too_few_usable_brokers_says_how_many_are_fenced() -> None:
    error = _placement_error(cluster((0, 1, 2), fenced=(2,)), 3)
    assert error.message == (
        "Unable to replicate the partition 3 time(s): The target replication factor of 3 "
        "cannot be reached because only 2 broker(s) are registered and usable (1 more are "
        "fenced or in controlled shutdown)."
    )


def test_all_fenced_and_non_positive_factors_are_refused() -> None:
    fenced = _placement_error(cluster((0, 1), fenced=(0, 1)), 1)
    assert fenced.message == (
        "Unable to replicate the partition 1 time(s): All brokers are currently fenced or in "
        "controlled shutdown."
    )
    zero = _placement_error(cluster((0, 1)), 0)
    assert zero.message == (
        "Unable to replicate the partition 0 time(s): Invalid replication factor 0: the "
        "replication factor must be positive."
    )
    with pytest.raises(ApiException, match="must be positive"):
        StripedReplicaPlacer([UsableBroker(0)], 0).place(-1)


@pytest.mark.parametrize(
    ("broker_ids", "message"),
    [
        ((), "The manual partition assignment includes an empty replica list."),
        ((0, 9, 1), "The manual partition assignment includes broker 9, but no such broker is "
                    "registered."),
        ((2, 1, 2, 9), "The manual partition assignment includes the broker 2 more than once."),
    ],
)
def test_manual_assignment_checks_in_kafkas_order(
    broker_ids: tuple[int, ...], message: str
) -> None:
    with pytest.raises(ApiException) as caught:
        validate_manual_assignment(cluster(), broker_ids, "manual partition assignment")
    assert caught.value.error is Errors.INVALID_REPLICA_ASSIGNMENT
    assert caught.value.message == message


def test_a_valid_manual_assignment_passes() -> None:
    validate_manual_assignment(cluster(), (2, 0, 1), "manual partition assignment")
    check_brokers_usable(cluster(), (2, 0, 1), "manual partition assignment")


@pytest.mark.parametrize(
    ("fenced", "shutdown", "message"),
    [
        ((1,), (), "The chunk assignment includes broker 1, which is fenced."),
        ((), (1,), "The chunk assignment includes broker 1, which is in controlled shutdown."),
    ],
)
def test_fenced_or_shutting_down_brokers_are_not_usable(
    fenced: tuple[int, ...], shutdown: tuple[int, ...], message: str
) -> None:
    image = cluster(fenced=fenced, shutdown=shutdown)
    with pytest.raises(ApiException) as caught:
        check_brokers_usable(image, (0, 1), "chunk assignment")
    assert caught.value.error is Errors.INVALID_REPLICA_ASSIGNMENT
    assert caught.value.message == message
