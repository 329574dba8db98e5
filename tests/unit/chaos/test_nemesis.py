"""The nemesis's schedule logic against stand-ins for the cluster and the network (the real
thing runs in tests/integration/test_chaos_campaign.py): every fault is healed, also when it
fails; a pause stops and resumes the leader's real process; a kill restarts its node."""

from __future__ import annotations

import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from chunkraft.chaos.nemesis import ALL_FAULTS, Nemesis


@dataclass
class Node:
    process: subprocess.Popen[bytes] | None = None
    url: str = "http://198.18.0.1:9092"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class FakeCluster:
    leader: int = 1
    nodes: dict[int, Node] = field(default_factory=lambda: {n: Node() for n in (1, 2, 3)})
    calls: list[str] = field(default_factory=list)

    def host_index(self, node_id: int) -> int:
        return node_id - 1

    def wait_leader(self, node_ids: list[int], timeout: float = 30.0) -> int:
        return self.leader

    def kill(self, node_id: int) -> None:
        self.calls.append(f"kill {node_id}")

    def start(self, node_id: int | None = None) -> None:
        self.calls.append(f"start {node_id}")


@dataclass
class FakeFaults:
    calls: list[str] = field(default_factory=list)
    fail_on: str | None = None

    def __getattr__(self, name: str) -> Any:
        def record(*args: object, **kwargs: object) -> None:
            self.calls.append(f"{name}{args}")
            if name == self.fail_on:
                raise RuntimeError(f"{name} failed")
        return record


def nemesis(cluster: FakeCluster, faults: FakeFaults, power: Any = None) -> Nemesis:
    n = Nemesis(cluster, faults, power, random.Random(0), election_timeout_s=0.05)  # type: ignore[arg-type]
    n.probe_minority = lambda nodes: []  # type: ignore[method-assign]
    n.probe_available = lambda nodes, limit: 0.25  # type: ignore[method-assign]
    return n


@pytest.mark.parametrize("name", [f for f in ALL_FAULTS if f != "power"])
def test_every_fault_is_healed_and_logged(name: str) -> None:
    cluster, faults = FakeCluster(), FakeFaults()
    event = nemesis(cluster, faults).run_fault(name, 0.05)
    assert event.fault == name and event.heal is not None and event.heal >= event.start
    assert faults.calls[-1] == "heal_all()"


def test_the_leader_is_what_a_partition_cuts_off() -> None:
    cluster, faults = FakeCluster(leader=2), FakeFaults()
    event = nemesis(cluster, faults).run_fault("partition", 0.05)
    assert faults.calls[0] == "isolate(1,)"          # host of node 2
    assert event.details["node"] == 2 and event.details["cut_at"] >= event.start
    assert event.details["write_available_s"] == 0.25


def test_a_fault_that_fails_to_start_is_still_healed() -> None:
    cluster, faults = FakeCluster(), FakeFaults(fail_on="loss")
    n = nemesis(cluster, faults)
    with pytest.raises(RuntimeError, match="loss failed"):
        n.run_fault("loss", 0.05)
    assert faults.calls[-1] == "heal_all()" and n.events[0].heal is not None


def test_a_pause_stops_the_leaders_process_and_resumes_it() -> None:
    cluster = FakeCluster()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        cluster.nodes[1].process = sleeper
        n = nemesis(cluster, FakeFaults())
        seen: list[str] = []

        def sleep_and_look(seconds: float) -> None:
            # A signal is delivered asynchronously: look (bounded) until the stop shows.
            for _ in range(100):
                if _state(sleeper.pid) == "T":
                    break
                time.sleep(0.01)
            seen.append(_state(sleeper.pid))
            time.sleep(seconds)

        n.sleep = sleep_and_look    # the nemesis's own wait, not the process-wide time.sleep
        event = n.run_fault("pause", 0.05)
        assert seen[0] == "T"                          # stopped during the pause
        for _ in range(100):                           # running again after it
            if _state(sleeper.pid) in ("S", "R"):
                break
            time.sleep(0.01)
        assert _state(sleeper.pid) in ("S", "R")
        assert event.details["paused_s"] == pytest.approx(0.1)
    finally:
        sleeper.kill()
        sleeper.wait()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def test_kills_take_the_leader_then_a_follower_and_restart_them() -> None:
    cluster = FakeCluster(leader=3)
    n = nemesis(cluster, FakeFaults())
    first = n.run_fault("kill", 0.01)
    second = n.run_fault("kill", 0.01)
    assert first.details["node"] == 3 and second.details["node"] in (1, 2)
    assert cluster.calls == ["kill 3", "start 3", f"kill {second.details['node']}",
                             f"start {second.details['node']}"]


def test_a_power_cut_cuts_every_controller_then_starts_them() -> None:
    cut: list[list[int]] = []

    class Power:
        def cut(self, node_ids: list[int]) -> None:
            cut.append(list(node_ids))

    cluster = FakeCluster()
    nemesis(cluster, FakeFaults(), Power()).run_fault("power", 0.01)
    assert cut == [[1, 2, 3]] and cluster.calls == ["start None"]


def test_a_power_cut_without_a_supply_is_refused() -> None:
    with pytest.raises(RuntimeError, match="power supply"):
        nemesis(FakeCluster(), FakeFaults()).run_fault("power", 0.01)
