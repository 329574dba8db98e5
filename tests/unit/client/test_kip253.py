"""kip253: a new partition waits until its prior partitions were consumed to the thresholds."""

from __future__ import annotations

from chunkraft.client.kip253 import gate_for


def test_a_partition_without_prior_epochs_has_no_gate() -> None:
    assert gate_for("t", 0, ()) is None


def test_the_gate_opens_once_every_prior_partition_reached_its_threshold() -> None:
    gate = gate_for("t", 2, [(0, 3), (1, 5)])
    assert gate is not None and not gate.is_open
    assert gate.needs() == {0: 3, 1: 5}
    consumed = {0: 4, 1: 0}
    assert not gate.open(consumed.get)  # thresholds unknown yet
    gate.set_threshold(0, 10)
    assert gate.needs() == {1: 5}
    gate.set_threshold(1, 0)  # nothing was written to partition 1 before the expansion
    assert gate.pending(consumed.get) == {0: 10}
    assert not gate.open(consumed.get)
    consumed[0] = 10
    assert gate.open(consumed.get)
    consumed[0] = 0
    assert gate.open(consumed.get)  # stays open


def test_an_unknown_consumed_offset_does_not_open_the_gate() -> None:
    gate = gate_for("t", 1, [(0, 0)])
    assert gate is not None
    gate.set_threshold(0, 7)
    assert not gate.open(lambda p: None)
    gate.set_threshold(0, -1)  # the epoch is unknown to the leader: nothing to wait for
    assert gate.open(lambda p: None)
