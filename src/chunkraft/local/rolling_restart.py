"""A rolling restart of a cluster: every broker, then every controller, one node at a time.

The order and the checks are the ones a Kafka operator follows by hand (``deploy/README.md``
gives the same steps for systemd and Kubernetes):

1. Before anything: every node runs, the quorum is ready, every broker is registered and
   unfenced. A roll never starts on a cluster that is already missing a node.
2. Brokers, by id. Before each: every partition the broker hosts has its whole replica set
   in its ISR, so stopping it leaves each of them no worse than one replica short. Then a
   controlled shutdown (SIGTERM: the controller moves its leaderships away first), a start,
   and two waits: the broker is registered and unfenced, and it is back in the ISR of every
   partition (active chunk) whose replicas include it, as the controllers' metadata says.
3. Controllers, followers first and the leader last (the leader is asked again before each
   step, so a leadership that moved is followed), so the quorum changes leader once, at the
   end. After each start: the node answers ``/readyz`` 200, and its applied metadata offset
   reaches the leader's offset read when it came back (it is caught up, not merely up).

A node that does not come back within ``timeout`` (or exits) stops the roll with a
:class:`RollingRestartError` that names the node, what was waited for and for how long; the
next node is never restarted while one is out. ``progress`` gets one line per step with its
timings. Every wait is bounded by ``timeout`` and polls every ``poll`` seconds.

The roll talks to the cluster through :class:`RollTarget`, a narrow interface:
:class:`LocalClusterTarget` is the one over a :class:`~chunkraft.local.local_cluster.LocalCluster`,
and the unit tests give a fake. ``guard`` wraps each start (``chunkraft cluster`` passes its
stopper's ``deferred``, so a signal never cuts a fork in half). Not thread-safe: one roll at a
time, from the thread that owns the cluster.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "RollStep",
    "RollTarget",
    "RollingRestartError",
    "rolling_restart",
]

DEFAULT_TIMEOUT = 120.0
"""Seconds one wait of the roll may take (a stop, a node coming back, an ISR catching up)."""
POLL_INTERVAL = 0.2
CLEAN_STOPS = frozenset({"exited with status 0"})
"""How a node's stop ends when it went well; any other end (SIGKILL after the timeout, an
error status, death by the SIGTERM itself) is noted in the step."""


class RollingRestartError(Exception):
    """The roll stopped: ``node`` (``broker 1``, ``controller 2``, or ``cluster``) did not do
    ``waited_for`` within ``seconds``; the nodes after it were not restarted."""

    def __init__(self, node: str, waited_for: str, seconds: float, detail: str = "") -> None:
        self.node = node
        self.waited_for = waited_for
        self.seconds = seconds
        self.detail = detail
        text = f"{node}: {waited_for} not reached within {seconds:g} s"
        super().__init__(f"{text}; {detail}" if detail else text)


class NodeExited(Exception):
    """The node being waited for exited (``str``: how, and where its log is)."""


class RollTarget(Protocol):
    """What a roll needs of a cluster. Each check answers now, without waiting; a node that
    exited makes a check raise :class:`NodeExited`."""

    def broker_ids(self) -> list[int]: ...

    def controller_ids(self) -> list[int]: ...

    def stop_broker(self, broker_id: int, timeout: float) -> str:
        """A controlled shutdown; a few words on how it ended (``exited with status 0``)."""

    def start_broker(self, broker_id: int) -> None: ...

    def broker_registered(self, broker_id: int) -> bool:
        """Running, registered and unfenced."""

    def isr_gaps(self, broker_id: int, *, others: bool = False) -> list[str]:
        """The partitions (``topic-N``) that host ``broker_id`` and miss it in their ISR; with
        ``others``, those that miss another of their replicas."""

    def stop_controller(self, node_id: int, timeout: float) -> str: ...

    def start_controller(self, node_id: int) -> None: ...

    def leader_id(self) -> int | None: ...

    def controller_ready(self, node_id: int) -> bool:
        """``/readyz`` answers 200."""

    def metadata_offset(self, node_id: int) -> int | None:
        """The node's applied metadata offset (None if it does not answer)."""

    def running(self, kind: str, node_id: int) -> bool: ...


@dataclass
class RollStep:
    """One node's restart: its phases' durations (seconds, in order) and a line for people."""

    node: str
    phases: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        parts = ", ".join(f"{name} {value:.1f} s" for name, value in self.phases.items())
        notes = "".join(f"; {note}" for note in self.notes)
        return f"{self.node} restarted in {self.seconds:.1f} s ({parts}){notes}"

    def as_json(self) -> dict[str, Any]:
        return {"node": self.node, "seconds": round(self.seconds, 3),
                "phases": {k: round(v, 3) for k, v in self.phases.items()},
                "notes": list(self.notes), "line": self.line()}


@contextlib.contextmanager
def _no_guard() -> Iterator[None]:
    yield


class _Roll:
    """One roll's state: its clock, timeouts, steps and callbacks."""

    def __init__(self, target: RollTarget, timeout: float, poll: float,
                 progress: Callable[[RollStep], None],
                 guard: Callable[[], AbstractContextManager[None]],
                 clock: Callable[[], float], sleep: Callable[[float], None]) -> None:
        self.target = target
        self.timeout = timeout
        self.poll = poll
        self.progress = progress
        self.guard = guard
        self.clock = clock
        self.sleep = sleep
        self.steps: list[RollStep] = []

    def wait(self, node: str, waited_for: str, done: Callable[[], bool],
             detail: Callable[[], str] = lambda: "") -> float:
        """Polls ``done`` until true; its duration. RollingRestartError on timeout or exit."""
        started = self.clock()
        deadline = started + self.timeout
        attempts = int(self.timeout / self.poll) + 2  # a bound that holds whatever the clock
        for _ in range(attempts):
            try:
                if done():
                    return self.clock() - started
            except NodeExited as exited:
                raise RollingRestartError(node, waited_for, self.clock() - started,
                                          f"it {exited}; the roll stopped here") from None
            if self.clock() >= deadline:
                break
            self.sleep(self.poll)
        more = detail()
        raise RollingRestartError(node, waited_for, self.timeout,
                                  (f"{more}; " if more else "") + "the roll stopped here")

    def check_all_running(self) -> None:
        for kind, ids in (("controller", self.target.controller_ids()),
                          ("broker", self.target.broker_ids())):
            stopped = [i for i in ids if not self.target.running(kind, i)]
            if stopped:
                raise RollingRestartError(
                    "cluster", "every node running", 0.0,
                    f"{kind} {', '.join(map(str, stopped))} not running: start "
                    f"{'it' if len(stopped) == 1 else 'them'} first; nothing was restarted")
        self.wait("cluster", "a controller leader", lambda: self.target.leader_id() is not None)
        for broker_id in self.target.broker_ids():
            self.wait(f"broker {broker_id}", "registered and unfenced (before the roll)",
                      functools.partial(self.target.broker_registered, broker_id))

    def roll_broker(self, broker_id: int) -> RollStep:
        target, node = self.target, f"broker {broker_id}"
        step = RollStep(node)
        started = self.clock()

        def gaps_text(others: bool) -> str:
            gaps = target.isr_gaps(broker_id, others=others)
            shown = ", ".join(gaps[:10]) + (f" and {len(gaps) - 10} more" if len(gaps) > 10
                                            else "")
            return f"partitions still out: {shown}" if gaps else ""

        step.phases["replicas in sync"] = self.wait(
            node, "every partition it hosts fully in sync (before its stop)",
            lambda: not target.isr_gaps(broker_id, others=True), lambda: gaps_text(True))
        stop_started = self.clock()
        how = target.stop_broker(broker_id, self.timeout)
        step.phases["controlled shutdown"] = self.clock() - stop_started
        if how not in CLEAN_STOPS:
            step.notes.append(f"the stop: {how}")
        with self.guard():
            target.start_broker(broker_id)
        step.phases["registered and unfenced"] = self.wait(
            node, "registered and unfenced after its start",
            lambda: target.broker_registered(broker_id))
        step.phases["back in every ISR"] = self.wait(
            node, "back in the ISR of every partition it hosts",
            lambda: not target.isr_gaps(broker_id), lambda: gaps_text(False))
        step.seconds = self.clock() - started
        return step

    def roll_controller(self, node_id: int, leader: int) -> RollStep:
        target, node = self.target, f"controller {node_id}"
        step = RollStep(node + (" (the leader)" if leader == node_id else ""))
        if leader != node_id:
            step.notes.append(f"the leader: controller {leader}")
        started = self.clock()
        how = target.stop_controller(node_id, self.timeout)
        step.phases["stop"] = self.clock() - started
        if how not in CLEAN_STOPS:
            step.notes.append(f"the stop: {how}")
        with self.guard():
            target.start_controller(node_id)
        step.phases["ready"] = self.wait(node, "/readyz 200 after its start",
                                         lambda: target.controller_ready(node_id))
        goal: list[int] = []

        def leader_offset() -> bool:
            current = target.leader_id()
            offset = target.metadata_offset(current) if current is not None else None
            if offset is not None:
                goal.append(offset)
            return offset is not None

        found = self.wait(node, "the leader's metadata offset", leader_offset)

        def caught_up() -> bool:
            offset = target.metadata_offset(node_id)
            return offset is not None and offset >= goal[0]

        step.phases["caught up"] = found + self.wait(
            node, f"its metadata offset at the leader's ({goal[0]})", caught_up,
            lambda: f"its offset is {target.metadata_offset(node_id)}")
        step.notes.append(f"caught up to offset {goal[0]}")
        now_leading = target.leader_id()
        if leader == node_id and now_leading is not None:
            step.notes.append(f"the leader now: controller {now_leading}")
        step.seconds = self.clock() - started
        return step

    def next_controller(self, left: list[int]) -> tuple[int, int]:
        """The next controller to restart (a follower while any is left, else the leader) and
        the leader's id."""
        leader: list[int | None] = []

        def known() -> bool:
            leader.append(self.target.leader_id())
            return leader[-1] is not None

        self.wait("cluster", "a controller leader (before the next controller)", known)
        current = leader[-1]
        assert current is not None
        followers = [n for n in left if n != current]
        return (followers[0], current) if followers else (left[0], current)

    def record(self, step: RollStep) -> None:
        self.steps.append(step)
        self.progress(step)


def rolling_restart(target: RollTarget, *, timeout: float = DEFAULT_TIMEOUT,
                    poll: float = POLL_INTERVAL,
                    progress: Callable[[RollStep], None] = lambda step: None,
                    guard: Callable[[], AbstractContextManager[None]] = _no_guard,
                    clock: Callable[[], float] = time.monotonic,
                    sleep: Callable[[float], None] = time.sleep,
                    brokers: Sequence[int] | None = None) -> list[RollStep]:
    """Restarts every broker (or those of ``brokers``), then every controller, one at a time
    (see the module docstring); the steps, each also passed to ``progress`` as it ends.
    RollingRestartError when a node does not come back: the roll stops there."""
    roll = _Roll(target, timeout, poll, progress, guard, clock, sleep)
    roll.check_all_running()
    for broker_id in sorted(target.broker_ids() if brokers is None else brokers):
        roll.record(roll.roll_broker(broker_id))
    left = sorted(target.controller_ids())
    while left:
        node_id, leader = roll.next_controller(left)
        left.remove(node_id)
        roll.record(roll.roll_controller(node_id, leader))
    return roll.steps
