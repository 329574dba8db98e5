"""TickWatch (chunkraft.controller.raft.log): the lag since the last tick, and stalls."""

from __future__ import annotations

from chunkraft.controller.raft.log import TickWatch


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
