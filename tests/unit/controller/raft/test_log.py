"""TickWatch (chunkraft.controller.raft.log): the lag since the last tick, stalls, and the
histogram of the gaps between ticks."""

from __future__ import annotations

import math

import pytest

from chunkraft.controller.raft.log import TICK_GAP_BUCKETS, TickWatch


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_lag_is_the_time_since_the_last_tick() -> None:
    clock = Clock()
    watch = TickWatch(0.5, clock)
    clock.now += 0.2
    assert round(watch.lag(), 6) == 0.2
    watch.tick()
    assert watch.lag() == 0.0


def test_a_gap_over_half_the_limit_is_a_stall_counted_and_reported() -> None:
    clock = Clock()
    reported: list[float] = []
    watch = TickWatch(0.5, clock, on_stall=reported.append)
    for _ in range(10):  # ticks 50 ms apart are no stall
        clock.now += 0.05
        watch.tick()
    assert (watch.stalls, reported) == (0, [])
    clock.now += 0.3
    watch.tick()
    clock.now += 1.5
    watch.tick()
    assert watch.stalls == 2
    assert [round(gap, 3) for gap in reported] == [0.3, 1.5]
    assert round(watch.longest_stall, 3) == 1.5


def bucket_of(bound: float) -> int:
    return TICK_GAP_BUCKETS.index(bound)


def test_the_buckets_rise_and_end_with_infinity() -> None:
    assert list(TICK_GAP_BUCKETS) == sorted(set(TICK_GAP_BUCKETS))
    assert TICK_GAP_BUCKETS[-1] == math.inf and 0.05 in TICK_GAP_BUCKETS


def test_every_gap_between_ticks_is_counted_in_its_bucket_and_summed() -> None:
    clock = Clock()
    watch = TickWatch(0.5, clock)
    clock.now += 7.0  # construction to the first tick: no gap between ticks
    watch.tick()
    assert (sum(watch.gap_counts), watch.gap_sum) == (0, 0.0)
    for gap in (0.0005, 0.003, 0.003, 0.04, 0.0503, 0.3, 9.0):
        clock.now += gap
        watch.tick()
    assert len(watch.gap_counts) == len(TICK_GAP_BUCKETS)
    assert watch.gap_counts[bucket_of(0.001)] == 1
    assert watch.gap_counts[bucket_of(0.005)] == 2
    assert watch.gap_counts[bucket_of(0.05)] == 1
    assert watch.gap_counts[bucket_of(0.06)] == 1  # an idle tick: pysyncobj's 50 ms poll, and a bit
    assert watch.gap_counts[bucket_of(0.5)] == 1
    assert watch.gap_counts[bucket_of(math.inf)] == 1  # past the last finite bound (2.5 s)
    assert sum(watch.gap_counts) == 7
    assert watch.gap_sum == pytest.approx(0.0005 + 0.003 + 0.003 + 0.04 + 0.0503 + 0.3 + 9.0)
    # The stalls are still every gap over half the limit, the first one included.
    assert watch.stalls == 3 and watch.longest_stall == pytest.approx(9.0)


def test_a_gap_equal_to_a_bound_is_in_that_bound_s_bucket() -> None:
    clock = Clock()
    clock.now = 0.0  # exact binary fractions: 0.5 and 1.0 are reached without rounding
    watch = TickWatch(10.0, clock)
    watch.tick()
    for gap in (0.5, 1.0):
        clock.now += gap
        watch.tick()
    assert watch.gap_counts[bucket_of(0.5)] == 1
    assert watch.gap_counts[bucket_of(1.0)] == 1
    assert sum(watch.gap_counts) == 2 and watch.gap_sum == 1.5
