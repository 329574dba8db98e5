"""The rolling restart's order and checks (chunkraft.local.rolling_restart), against a fake
cluster on a fake clock: brokers one at a time, each back in its ISRs before the next; then
controllers, followers first and the leader last; a node that does not come back stops the roll
with an error that names it and what was waited for."""

from __future__ import annotations

import pytest

from chunkraft.local.rolling_restart import (
    NodeExited,
    RollingRestartError,
    RollStep,
    rolling_restart,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeCluster:
    """3 controllers (1..3), 3 brokers (0..2); a started node comes back after ``delay``
    polls of each check. ``events`` records every stop and start, and each check that
    passed for the first time."""

    def __init__(self, leader: int = 1) -> None:
        self.leader = leader
        self.brokers = {0: True, 1: True, 2: True}
        self.controllers = {1: True, 2: True, 3: True}
        self.events: list[str] = []
        self.polls: dict[str, int] = {}
        self.delay = 2
        self.never: set[str] = set()
        """Checks that never pass: ``registered 1``, ``isr 1``, ``ready 2``, ``offset 2``."""
        self.exits: set[str] = set()
        self.leader_after: dict[int, int] = {}
        """Controller id -> the leader once that controller restarted (a moved leadership)."""
        self.offset = 100
        self.restarted: set[str] = set()
        """Nodes started by the roll (``broker 1``): a check of another passes at once."""

    def _passes(self, check: str) -> bool:
        if check in self.exits:
            raise NodeExited("exited with status 1; its log: /d/broker-1/broker.log")
        if check in self.never:
            return False
        self.polls[check] = self.polls.get(check, 0) + 1
        if self.polls[check] == self.delay:
            self.events.append(check)
        return self.polls[check] >= self.delay

    def broker_ids(self) -> list[int]:
        return list(self.brokers)

    def controller_ids(self) -> list[int]:
        return list(self.controllers)

    def running(self, kind: str, node_id: int) -> bool:
        return (self.brokers if kind == "broker" else self.controllers)[node_id]

    def stop_broker(self, broker_id: int, timeout: float) -> str:
        self.events.append(f"stop broker {broker_id}")
        self.brokers[broker_id] = False
        return "exited with status 0"

    def start_broker(self, broker_id: int) -> None:
        self.events.append(f"start broker {broker_id}")
        self.brokers[broker_id] = True
        self.restarted.add(f"broker {broker_id}")
        for check in (f"registered {broker_id}", f"isr {broker_id}"):
            self.polls.pop(check, None)

    def broker_registered(self, broker_id: int) -> bool:
        if f"broker {broker_id}" not in self.restarted:
            return self.brokers[broker_id]
        return self.brokers[broker_id] and self._passes(f"registered {broker_id}")

    def isr_gaps(self, broker_id: int, *, others: bool = False) -> list[str]:
        if others:
            return [] if all(self.brokers.values()) else ["t-0"]
        if not self.brokers[broker_id] or not self._passes(f"isr {broker_id}"):
            return ["t-0", "t-1"]
        return []

    def stop_controller(self, node_id: int, timeout: float) -> str:
        self.events.append(f"stop controller {node_id}")
        self.controllers[node_id] = False
        if node_id == self.leader:
            self.leader = min(n for n, up in self.controllers.items() if up)
        return "exited with status 0"

    def start_controller(self, node_id: int) -> None:
        self.events.append(f"start controller {node_id}")
        self.controllers[node_id] = True
        self.restarted.add(f"controller {node_id}")
        self.leader = self.leader_after.get(node_id, self.leader)
        for check in (f"ready {node_id}", f"offset {node_id}"):
            self.polls.pop(check, None)

    def leader_id(self) -> int | None:
        return self.leader

    def controller_ready(self, node_id: int) -> bool:
        return self.controllers[node_id] and self._passes(f"ready {node_id}")

    def metadata_offset(self, node_id: int) -> int | None:
        if node_id == self.leader:
            return self.offset
        return self.offset if self._passes(f"offset {node_id}") else self.offset - 5


def _roll(cluster: FakeCluster, lines: list[str] | None = None) -> list[RollStep]:
    clock = FakeClock()
    kept = [] if lines is None else lines
    return rolling_restart(cluster, timeout=5.0, poll=0.1, clock=clock, sleep=clock.sleep,
                           progress=lambda step: kept.append(step.line()))


def test_brokers_one_at_a_time_each_back_in_its_isrs_then_followers_then_the_leader() -> None:
    cluster = FakeCluster(leader=1)
    lines: list[str] = []
    steps = _roll(cluster, lines)
    assert [step.node for step in steps] == [
        "broker 0", "broker 1", "broker 2", "controller 2", "controller 3",
        "controller 1 (the leader)"]
    brokers = [e for e in cluster.events if "controller" not in e and "ready" not in e
               and "offset" not in e]
    assert brokers == [
        "stop broker 0", "start broker 0", "registered 0", "isr 0",
        "stop broker 1", "start broker 1", "registered 1", "isr 1",
        "stop broker 2", "start broker 2", "registered 2", "isr 2"]
    controllers = [e for e in cluster.events if "controller" in e or "ready" in e
                   or "offset" in e]
    assert controllers == [
        "stop controller 2", "start controller 2", "ready 2", "offset 2",
        "stop controller 3", "start controller 3", "ready 3", "offset 3",
        "stop controller 1", "start controller 1", "ready 1", "offset 1"]
    assert len(lines) == 6
    assert lines[0].startswith("broker 0 restarted in ")
    assert "controlled shutdown" in lines[0] and "back in every ISR" in lines[0]
    assert "caught up to offset 100" in lines[3]
    assert all(step.seconds > 0 for step in steps)


def test_a_leadership_that_moves_is_followed_the_new_leader_goes_last() -> None:
    cluster = FakeCluster(leader=2)
    cluster.leader_after = {1: 3}  # once controller 1 restarted, controller 3 leads
    steps = _roll(cluster)
    assert [step.node for step in steps][3:] == [
        "controller 1", "controller 2", "controller 3 (the leader)"]


def test_a_broker_that_does_not_register_stops_the_roll_naming_it() -> None:
    cluster = FakeCluster()
    cluster.never = {"registered 1"}
    lines: list[str] = []
    with pytest.raises(RollingRestartError) as raised:
        _roll(cluster, lines)
    error = raised.value
    assert (error.node, error.waited_for) == ("broker 1", "registered and unfenced after its "
                                                          "start")
    assert str(error) == ("broker 1: registered and unfenced after its start not reached "
                          "within 5 s; the roll stopped here")
    assert "stop broker 2" not in cluster.events
    assert not any("controller" in e for e in cluster.events)
    assert len(lines) == 1  # broker 0 only


def test_a_broker_not_back_in_its_isrs_is_named_with_the_partitions() -> None:
    cluster = FakeCluster()
    cluster.never = {"isr 0"}
    with pytest.raises(RollingRestartError) as raised:
        _roll(cluster)
    assert raised.value.node == "broker 0"
    assert "back in the ISR of every partition it hosts" in str(raised.value)
    assert "partitions still out: t-0, t-1" in str(raised.value)
    assert "stop broker 1" not in cluster.events


def test_a_broker_that_exits_stops_the_roll_at_once() -> None:
    cluster = FakeCluster()
    cluster.exits = {"registered 0"}
    with pytest.raises(RollingRestartError) as raised:
        _roll(cluster)
    assert raised.value.seconds < 1.0
    assert "it exited with status 1; its log: /d/broker-1/broker.log" in str(raised.value)
    assert cluster.events[-1] == "start broker 0"


def test_a_controller_that_does_not_catch_up_stops_the_roll_before_the_leader() -> None:
    cluster = FakeCluster(leader=3)
    cluster.never = {"offset 1"}
    with pytest.raises(RollingRestartError) as raised:
        _roll(cluster)
    assert raised.value.node == "controller 1"
    assert "its metadata offset at the leader's (100)" in str(raised.value)
    assert "its offset is 95" in str(raised.value)
    assert "stop controller 2" not in cluster.events
    assert "stop controller 3" not in cluster.events


def test_a_controller_that_is_never_ready_is_named() -> None:
    cluster = FakeCluster(leader=1)
    cluster.never = {"ready 2"}
    with pytest.raises(RollingRestartError, match=r"^controller 2: /readyz 200 after its "
                       r"start not reached within 5 s"):
        _roll(cluster)
    assert "stop controller 3" not in cluster.events


def test_a_node_already_stopped_refuses_the_roll_before_any_restart() -> None:
    cluster = FakeCluster()
    cluster.brokers[2] = False
    with pytest.raises(RollingRestartError, match="broker 2 not running: start it first; "
                       "nothing was restarted"):
        _roll(cluster)
    assert cluster.events == []


def test_the_starts_run_inside_the_guard() -> None:
    cluster = FakeCluster()
    inside: list[bool] = []
    guarded = [False]

    class Guard:
        def __enter__(self) -> None:
            guarded[0] = True

        def __exit__(self, *exc_info: object) -> None:
            guarded[0] = False

    original = cluster.start_broker

    def start(broker_id: int) -> None:
        inside.append(guarded[0])
        original(broker_id)

    cluster.start_broker = start  # type: ignore[method-assign]
    clock = FakeClock()
    rolling_restart(cluster, timeout=5.0, poll=0.1, clock=clock, sleep=clock.sleep,
                    guard=Guard)
    assert inside == [True, True, True]
