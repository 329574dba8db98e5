"""The consumer's KIP-253 gate (``client.consumer_membership``): a new partition waits for its
prior partition's thresholds."""

from __future__ import annotations

from tests.unit.client.consumer_fakes import FakeCluster, consumer, drain


def test_kip_253_the_new_partition_waits_for_the_prior_partition(fake: FakeCluster) -> None:
    with consumer(max_poll_records=1) as reader:
        reader.assign([("t", 0), ("t", 1)])
        reader.seek_to_beginning()
        got = drain(reader, 80)
    offsets = [(r.partition, r.offset) for r in got]
    assert sorted(offsets) == sorted([(0, o) for o in range(15)] + [(1, o) for o in range(3)])
    first_new = offsets.index((1, 0))
    consumed_before = [o for p, o in offsets[:first_new] if p == 0]
    assert max(consumed_before) + 1 >= fake.threshold


def test_without_a_gate_a_partition_started_past_zero_is_read_at_once(
        fake: FakeCluster) -> None:
    with consumer() as reader:
        reader.assign([("t", 1)])
        reader.seek(("t", 1), 1)
        # Prior partition 0 is not read by this consumer and it has no group: not waited for.
        got = drain(reader, 5)
    assert [r.offset for r in got] == [1, 2]
