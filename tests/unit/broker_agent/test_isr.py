"""The leader's follower tracking: HW over the maximal ISR, shrink and expand candidates."""

from __future__ import annotations

from chunkraft.broker_agent.isr import IsrTracker


def test_hw_is_the_smallest_leo_of_the_isr_and_never_goes_back() -> None:
    tracker = IsrTracker(0, (0, 1, 2), (0, 1, 2), now_ms=0)
    assert tracker.high_watermark(leader_leo=10, current_hw=0) == 0  # followers unknown
    tracker.record_fetch(1, 10, 10, 5, now_ms=1)
    tracker.record_fetch(2, 4, 10, 5, now_ms=1)
    assert tracker.high_watermark(10, 0) == 4
    tracker.set_isr((0, 1))
    assert tracker.high_watermark(10, 4) == 10
    tracker.record_fetch(1, 3, 10, 5, now_ms=2)  # a truncated follower: the HW stays
    assert tracker.high_watermark(10, 10) == 10


def test_pending_expansion_counts_for_the_hw() -> None:
    tracker = IsrTracker(0, (0, 1), (0,), now_ms=0)
    tracker.record_fetch(1, 5, 10, 5, now_ms=1)
    assert tracker.high_watermark(10, 0) == 10
    tracker.pending_isr = (0, 1)
    assert tracker.maximal_isr() == (0, 1)
    assert tracker.high_watermark(10, 0) == 5


def test_shrink_after_the_lag_time_and_expand_at_the_hw() -> None:
    tracker = IsrTracker(0, (0, 1, 2), (0, 1, 2), now_ms=0)
    tracker.record_fetch(1, 10, 10, 5, now_ms=100)
    tracker.record_fetch(2, 2, 10, 5, now_ms=100)
    assert tracker.shrink_candidates(10, lag_max_ms=1000, now_ms=500) == []
    assert tracker.shrink_candidates(10, lag_max_ms=1000, now_ms=1500) == [2]
    tracker.set_isr((0, 1))
    assert tracker.expand_candidates(hw=10, epoch_start=0) == []
    tracker.record_fetch(2, 10, 10, 5, now_ms=1600)
    assert tracker.expand_candidates(hw=10, epoch_start=0) == [2]
    assert tracker.expand_candidates(hw=10, epoch_start=12) == []


def test_a_follower_that_reached_the_previous_leo_was_caught_up_then() -> None:
    tracker = IsrTracker(0, (0, 1), (0, 1), now_ms=0)
    tracker.record_fetch(1, 5, 10, 5, now_ms=100)    # behind
    tracker.record_fetch(1, 10, 20, 5, now_ms=900)   # reached the LEO of its last fetch
    assert tracker.followers[1].last_caught_up_ms == 100
    assert tracker.shrink_candidates(20, lag_max_ms=1000, now_ms=1050) == []
