"""The nemesis: faults on a schedule against a NetnsCluster, each healed before the next.

A fault is started, left in place for a while, then healed; between faults the cluster gets a
quiet period. Every fault is logged with its start and heal times on the same clock as the
history (``time.monotonic_ns()``, system-wide), so a campaign can line faults up with the
operations they met.

The faults:

- ``partition``: cut the leader's host from every other host; heal: routes restored.
- ``halves``: split the controllers' hosts into two halves; heal: routes restored.
- ``flap``: the leader's link down and up every 0.5 s; heal: flapping stops, link up.
- ``loss``: every controller host drops 20 % of the packets it sends; heal: tables removed.
- ``delay``: the leader's host delays what it sends by 200 ms; heal: delay removed.
- ``pause``: SIGSTOP the leader for twice the longest election timeout, then SIGCONT.
- ``kill``: kill -9 of one controller (the leader and a follower by turns); heal: started.
- ``power``: a power cut of every controller (unsynced bytes lost, :mod:`.power`); heal:
  all started again.

While the leader is partitioned away, and while the halves are split, the nemesis *probes the
minority*: a client on the observer host sends writes straight to each controller of the
minority side. Raft says none of them may be acknowledged; a success is counted in
``minority_acks`` and fails the campaign.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from chunkraft.chaos.faults import NetworkFaults, halves
from chunkraft.chaos.netns_cluster import NetnsCluster

__all__ = ["ALL_FAULTS", "FaultEvent", "Nemesis", "PowerCut"]

ALL_FAULTS = ("partition", "halves", "flap", "loss", "delay", "pause", "kill", "power")

# Scripts run on the observer host (the test process has no route to the hosts). Both write
# new topics with the standard library; _WRITE is their shared head.
_WRITE = textwrap.dedent("""\
    import json, sys, time, secrets, urllib.request
    request = json.load(sys.stdin)

    def write(url, prefix):
        name = f"{prefix}-{secrets.token_hex(6)}"
        body = json.dumps({"topics": [{"name": name, "num_partitions": 1,
                                       "replication_factor": 1}]}).encode()
        req = urllib.request.Request(url + "/controller/v1/create-topics", data=body,
                                     headers={**request["headers"],
                                              "content-type": "application/json",
                                              "Idempotency-Key": secrets.token_hex(16)})
        try:
            with urllib.request.urlopen(req, timeout=request["timeout"]) as answer:
                topics = json.load(answer).get("topics") or [{}]
                return name if topics[0].get("error_code") == 0 else None
        except Exception:
            return None
""")

_PROBE = _WRITE + textwrap.dedent("""\
    acks = [{"url": url, "topic": name} for url in request["urls"]
            for _ in range(request["writes"]) if (name := write(url, "minority-probe"))]
    print(json.dumps(acks))
""")

_AVAILABLE = _WRITE + textwrap.dedent("""\
    started = time.monotonic()
    attempt = 0
    while time.monotonic() - started < request["limit"]:
        url = request["urls"][attempt % len(request["urls"])]
        attempt += 1
        if write(url, "availability-probe"):
            print(json.dumps({"seconds": time.monotonic() - started, "attempts": attempt}))
            sys.exit(0)
        time.sleep(request["pause"])
    print(json.dumps({"seconds": None, "attempts": attempt}))
""")


class PowerCut(Protocol):
    """Cuts the power of controllers: afterwards they are stopped, and only what they made
    durable is left in their data directories (see :mod:`chunkraft.chaos.power`)."""

    def cut(self, node_ids: Sequence[int]) -> None: ...


@dataclass
class FaultEvent:
    """One fault as it happened: times in ``monotonic_ns``, details (which nodes, ...)."""

    fault: str
    start: int
    heal: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"fault": self.fault, "start": self.start, "heal": self.heal, **self.details}


@dataclass
class Nemesis:
    """Runs faults against ``cluster`` (a NetnsCluster of controllers on ``faults.hosts``).

    Contract: every fault started by :meth:`run_fault` is healed before it returns (also when
    the fault's own start failed), and :meth:`heal_everything` leaves every controller running
    with the network whole. ``power`` may be None: then the ``power`` fault is refused.
    """

    cluster: NetnsCluster
    faults: NetworkFaults
    power: PowerCut | None = None
    rng: random.Random = field(default_factory=random.Random)
    election_timeout_s: float = 0.5
    probe_writes: int = 2
    events: list[FaultEvent] = field(default_factory=list)
    minority_acks: list[dict[str, Any]] = field(default_factory=list)
    log: Callable[[str], None] = lambda line: None
    sleep: Callable[[float], None] = time.sleep
    """How the nemesis waits (a test passes its own, never patching ``time.sleep``)."""
    _kills: int = 0

    # ------------------------------------------------------------------ helpers

    def _leader(self) -> int:
        """The current leader (waits for one, bounded); a random node if none is agreed."""
        try:
            running = [n for n, node in self.cluster.nodes.items() if node.running]
            return self.cluster.wait_leader(running, timeout=10.0)
        except (TimeoutError, RuntimeError):
            return self.rng.choice(sorted(self.cluster.nodes))

    def _host(self, node_id: int) -> int:
        return self.cluster.host_index(node_id)

    def probe_minority(self, node_ids: Sequence[int]) -> list[dict[str, Any]]:
        """Writes sent straight to ``node_ids`` from the observer host; returns those that were
        acknowledged with success (there must be none)."""
        result = self._on_observer(_PROBE, {
            "urls": [self.cluster.nodes[n].url for n in node_ids],
            "headers": self.cluster.headers, "writes": self.probe_writes, "timeout": 1.5},
            timeout=10 + 2 * len(node_ids) * self.probe_writes)
        acks: list[dict[str, Any]] = result
        self.minority_acks.extend(acks)
        return acks

    def probe_available(self, node_ids: Sequence[int], limit: float) -> float | None:
        """Seconds until a new write sent to ``node_ids`` (in turns, a new topic each try,
        0.5 s per attempt, 50 ms apart) is acknowledged, measured on the observer host from
        now; None if none was within ``limit`` seconds. The measure etcd's failover anchor
        uses (first successful put on a survivor)."""
        result = self._on_observer(_AVAILABLE, {
            "urls": [self.cluster.nodes[n].url for n in node_ids],
            "headers": self.cluster.headers, "limit": limit, "timeout": 0.5, "pause": 0.05},
            timeout=limit + 15)
        seconds = result["seconds"]
        return None if seconds is None else float(seconds)

    def _on_observer(self, script: str, request: dict[str, Any], *, timeout: float) -> Any:
        """Runs ``script`` on the observer host with ``request`` as JSON on its stdin; returns
        the JSON it prints."""
        hosts = self.cluster.hosts
        assert hosts is not None and self.cluster.observer is not None
        result = subprocess.run(hosts.command(self.cluster.observer,
                                              [sys.executable, "-c", script]),
                                input=json.dumps(request), capture_output=True, text=True,
                                timeout=timeout, check=True)
        return json.loads(result.stdout)

    def _signal(self, node_id: int, signum: signal.Signals) -> None:
        process = self.cluster.nodes[node_id].process
        if process is not None and process.poll() is None:
            os.kill(process.pid, signum)

    # ------------------------------------------------------------------ faults

    def run_fault(self, name: str, seconds: float) -> FaultEvent:
        """Starts fault ``name``, holds it about ``seconds``, heals it; returns its event."""
        event = FaultEvent(name, time.monotonic_ns())
        self.events.append(event)
        try:
            getattr(self, f"_fault_{name}")(event, seconds)
        finally:
            self.heal_network()
            self._resume_all()
            event.heal = time.monotonic_ns()
        self.log(f"fault {name} {event.details} healed after "
                 f"{(event.heal - event.start) / 1e9:.1f} s")
        return event

    def _fault_partition(self, event: FaultEvent, seconds: float) -> None:
        leader = self._leader()
        event.details["node"] = leader
        self.faults.isolate(self._host(leader))
        # Availability is measured from here: writes the old leader acknowledged before its
        # host was cut off are not a recovery.
        event.details["cut_at"] = cut_at = time.monotonic_ns()
        majority = [n for n in sorted(self.cluster.nodes) if n != leader]
        event.details["write_available_s"] = self.probe_available(majority, seconds)
        event.details["minority_acks"] = len(self.probe_minority([leader]))
        self.sleep(max(0.0, seconds - (time.monotonic_ns() - cut_at) / 1e9))

    def _fault_halves(self, event: FaultEvent, seconds: float) -> None:
        size = len(self.cluster.nodes)
        first, _rest = halves(size)
        # halves() of the controllers only: the observer keeps every link.
        minority = [n for n in self.cluster.nodes if self._host(n) in first]
        majority = [n for n in self.cluster.nodes if n not in minority]
        self.faults.partition([self._host(n) for n in minority],
                              [self._host(n) for n in majority])
        event.details.update(minority=minority, majority=majority)
        self.sleep(min(seconds / 2, 2.0))
        event.details["minority_acks"] = len(self.probe_minority(minority))
        self.sleep(max(0.0, seconds - min(seconds / 2, 2.0)))

    def _fault_flap(self, event: FaultEvent, seconds: float) -> None:
        leader = self._leader()
        event.details["node"] = leader
        cycles = max(1, int(seconds / 1.0))
        self.faults.start_flap(self._host(leader), down_seconds=0.5, up_seconds=0.5,
                               cycles=cycles)
        self.sleep(seconds)

    def _fault_loss(self, event: FaultEvent, seconds: float) -> None:
        nodes = sorted(self.cluster.nodes)
        event.details.update(nodes=nodes, percent=20)
        for node_id in nodes:
            self.faults.loss(self._host(node_id), 20)
        self.sleep(seconds)

    def _fault_delay(self, event: FaultEvent, seconds: float) -> None:
        leader = self._leader()
        event.details.update(node=leader, delay_ms=200)
        self.faults.delay(self._host(leader), 200)
        self.sleep(seconds)

    def _fault_pause(self, event: FaultEvent, seconds: float) -> None:
        leader = self._leader()
        pause = 2 * self.election_timeout_s
        event.details.update(node=leader, paused_s=pause)
        self._signal(leader, signal.SIGSTOP)
        try:
            self.sleep(pause)
        finally:
            self._signal(leader, signal.SIGCONT)
        self.sleep(max(0.0, seconds - pause))

    def _fault_kill(self, event: FaultEvent, seconds: float) -> None:
        # By turns the leader and a follower, so both kinds of crash are met.
        leader = self._leader()
        followers = [n for n in sorted(self.cluster.nodes) if n != leader]
        victim = leader if self._kills % 2 == 0 or not followers else self.rng.choice(followers)
        self._kills += 1
        event.details["node"] = victim
        self.cluster.kill(victim)
        self.sleep(seconds)
        self.cluster.start(victim)

    def _fault_power(self, event: FaultEvent, seconds: float) -> None:
        if self.power is None:
            raise RuntimeError("the power fault needs a power supply (chaos/power.py)")
        nodes = sorted(self.cluster.nodes)
        event.details["nodes"] = nodes
        self.power.cut(nodes)
        self.sleep(min(seconds, 1.0))
        self.cluster.start()

    # ------------------------------------------------------------------ healing

    def heal_network(self) -> None:
        """Every network fault undone (links, routes, loss, delay)."""
        self.faults.heal_all()

    def _resume_all(self) -> None:
        for node_id in self.cluster.nodes:
            self._signal(node_id, signal.SIGCONT)

    def heal_everything(self, timeout: float = 60.0) -> int:
        """Network whole, every process resumed, every stopped controller started; waits
        for all of them to agree on a leader and returns it."""
        self.heal_network()
        self._resume_all()
        self.cluster.start()
        return self.cluster.wait_leader(sorted(self.cluster.nodes), timeout=timeout)
