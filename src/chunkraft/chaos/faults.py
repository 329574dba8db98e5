"""Network faults on :class:`~chunkraft.chaos.netns.Hosts`, each with its heal.

Mechanisms, the simplest that are reliable on our machines (and why):

- **Partitions** (:meth:`NetworkFaults.partition`, :meth:`~NetworkFaults.isolate`,
  :meth:`~NetworkFaults.split_halves`): for every pair cut, each side gets an ``unreachable``
  /32 route to the other. A /32 beats the connected /24, so both directions are cut and nothing
  else is; only iproute2 is needed. A send across the cut fails at once with EHOSTUNREACH (as
  after an ICMP host-unreachable) rather than timing out; adding a route invalidates the routes
  TCP sockets cached, so established connections are cut too.
- **Link flaps** (:meth:`NetworkFaults.start_flap`): the host's bridge-side veth goes down and up
  on a schedule, a bounded number of cycles, on a thread of its own; the heal stops it and
  leaves the link up.
- **Packet loss** (:meth:`NetworkFaults.loss`): an nftables table in the host's namespace drops
  ``numgen random mod 100 < percent`` of what leaves ``eth0`` (egress, like netem on the
  interface). Needs the ``nft`` command (Debian package ``nftables``).
- **Delay** (:meth:`NetworkFaults.delay`): every packet the host sends arrives ``delay_ms``
  late. ``tc qdisc ... netem delay`` on the host's ``eth0`` when the kernel has ``sch_netem``
  (:func:`netem_supported`). Otherwise the NFQUEUE delayer (:mod:`chunkraft.chaos.delay`), on
  the receiving side: in every *other* host's namespace an iptables rule queues what arrives
  on ``eth0`` from the delayed host (``INPUT -s <host> -j NFQUEUE --queue-bypass``) to a
  delayer process there. Not in the sender's own OUTPUT: a packet held there still counts
  against its TCP socket's small-queue budget (netem orphans it, a queue cannot), so a bulk
  transfer would crawl at about two segments per delay; held on arrival it costs the sender
  nothing. Needs the ``iptables`` command (Debian package ``iptables``; its nft and legacy
  backends both work in a namespace) and a kernel with nfnetlink_queue and the xtables NFQUEUE
  target. With neither, :class:`FaultUnsupported` (nftables alone cannot delay). The heal
  removes the rules first, then stops the delayers by PID: each accepts what it still holds,
  and with no listener ``--queue-bypass`` passes packets, so none is stranded.

:meth:`NetworkFaults.heal_all` removes every fault this object made. Not thread-safe, except
that a flap runs on its own thread until healed.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from chunkraft.chaos.netns import COMMAND_TIMEOUT_SECONDS, Hosts, HostsError, netns_exec

__all__ = [
    "FaultUnsupported",
    "NetworkFaults",
    "cut_pairs",
    "delayer_command",
    "halves",
    "iptables_available",
    "loss_ruleset",
    "netem_delay_command",
    "netem_supported",
    "nfqueue_rule_command",
    "nft_available",
    "route_command",
]

LOSS_TABLE = "chunkraft_chaos"
MAX_FLAP_CYCLES = 1000
DEVICE = "eth0"
DELAY_QUEUE_BASE = 200
"""Packets from host ``i`` wait in NFQUEUE ``DELAY_QUEUE_BASE + i`` of each receiving host."""
DELAYER_STOP_SECONDS = 5.0


class FaultUnsupported(HostsError):
    """The machine lacks what a fault needs (a kernel module or a command)."""


def cut_pairs(groups: Sequence[Iterable[int]]) -> set[tuple[int, int]]:
    """Every ordered pair (a, b) of hosts in different groups: the directions a partition cuts."""
    sets = [frozenset(group) for group in groups]
    for left, right in itertools.combinations(sets, 2):
        if left & right:
            raise ValueError(f"hosts {sorted(left & right)} are in two groups")
    return {(a, b) for left, right in itertools.permutations(sets, 2)
            for a in left for b in right}


def halves(count: int) -> tuple[list[int], list[int]]:
    """Hosts 0 .. count-1 split in two: the first ``count // 2`` and the rest (the majority)."""
    if count < 2:
        raise ValueError("two halves need two hosts")
    return list(range(count // 2)), list(range(count // 2, count))


def route_command(netns: str, address: str, *, add: bool) -> list[str]:
    """The ``ip`` command that adds (idempotently) or deletes the cut route to ``address``."""
    verb = "replace" if add else "del"
    return ["ip", "-n", netns, "route", verb, "unreachable", f"{address}/32"]


def loss_ruleset(percent: int) -> str:
    """The nftables script that drops ``percent`` % of the packets leaving ``eth0``."""
    if not 0 < percent <= 100:
        raise ValueError(f"loss {percent} % outside 1 .. 100")
    return (f"table inet {LOSS_TABLE} {{\n"
            f"  chain egress {{\n"
            f"    type filter hook output priority 0; policy accept;\n"
            f"    oifname \"{DEVICE}\" numgen random mod 100 < {percent} drop\n"
            f"  }}\n"
            f"}}\n")


def netem_delay_command(netns: str, delay_ms: int, jitter_ms: int = 0) -> list[str]:
    """The ``tc`` command that delays every packet leaving the host's ``eth0``."""
    if delay_ms <= 0:
        raise ValueError("delay must be positive")
    jitter = [f"{jitter_ms}ms"] if jitter_ms else []
    return netns_exec(netns, ["tc", "qdisc", "replace", "dev", DEVICE, "root", "netem",
                              "delay", f"{delay_ms}ms", *jitter])


def nfqueue_rule_command(netns: str, source: str, queue: int, *, add: bool) -> list[str]:
    """The iptables command that queues (or stops queueing) to ``queue`` what arrives on the
    ``eth0`` of namespace ``netns`` from address ``source``.

    ``--queue-bypass``: with no process bound to the queue, packets pass rather than drop.
    """
    return netns_exec(netns, ["iptables", "-w", "5", "-A" if add else "-D", "INPUT",
                              "-i", DEVICE, "-s", f"{source}/32", "-j", "NFQUEUE",
                              "--queue-num", str(queue), "--queue-bypass"])


def delayer_command(delay_ms: int, jitter_ms: int, queue: int) -> list[str]:
    """The command that runs the NFQUEUE delayer (:mod:`chunkraft.chaos.delay`)."""
    if delay_ms <= 0:
        raise ValueError("delay must be positive")
    if not 0 <= jitter_ms <= delay_ms:
        raise ValueError(f"jitter {jitter_ms} ms outside 0 .. {delay_ms} ms")
    return [sys.executable, "-m", "chunkraft.chaos.delay", "--queue", str(queue),
            "--delay-ms", str(delay_ms), "--jitter-ms", str(jitter_ms)]


def nft_available() -> bool:
    return shutil.which("nft") is not None


def iptables_available() -> bool:
    return shutil.which("iptables") is not None


def _run(argv: Sequence[str], *, stdin: str | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), input=stdin, capture_output=True, text=True,
                            check=False, timeout=COMMAND_TIMEOUT_SECONDS)
    if check and result.returncode != 0:
        raise HostsError(f"{' '.join(argv)}: exit {result.returncode}: {result.stderr.strip()}")
    return result


def netem_supported(hosts: Hosts) -> bool:
    """Whether this kernel has netem: tried (and removed) on host 0's ``eth0``."""
    netns = hosts[0].netns
    if _run(netem_delay_command(netns, 1), check=False).returncode != 0:
        return False
    _run(["ip", "netns", "exec", netns, "tc", "qdisc", "del", "dev", DEVICE, "root"],
         check=False)
    return True


@dataclass
class _Flap:
    index: int
    thread: threading.Thread
    stop: threading.Event


@dataclass
class NetworkFaults:
    """Network faults on ``hosts``; every fault made here is undone by its heal or heal_all.

    Contract: after :meth:`heal_all` returns, the hosts reach one another as before any fault
    (no cut route, no loss table, no netem qdisc or NFQUEUE rule of ours, no delayer running,
    every link up, no flap running). Not thread-safe (a flap's own thread only toggles its
    link).
    """

    hosts: Hosts
    cuts: set[tuple[int, int]] = field(default_factory=set)
    lossy: set[int] = field(default_factory=set)
    delayed: set[int] = field(default_factory=set)
    delayers: dict[int, dict[int, subprocess.Popen[bytes]]] = field(default_factory=dict)
    """Delayed host -> receiving host -> its delayer, for hosts delayed by NFQUEUE."""
    delay_reports: dict[int, dict[int, dict[str, object]]] = field(default_factory=dict)
    """Delayed host -> receiving host -> the counts its delayer printed when it stopped."""
    flaps: dict[int, _Flap] = field(default_factory=dict)
    links_down: set[int] = field(default_factory=set)

    # Partitions ------------------------------------------------------------------------------

    def partition(self, *groups: Iterable[int]) -> set[tuple[int, int]]:
        """Cuts every pair of hosts in different groups (both ways); returns the pairs cut."""
        pairs = cut_pairs(list(groups))
        for a, b in sorted(pairs - self.cuts):
            _run(route_command(self.hosts[a].netns, self.hosts[b].address, add=True))
            self.cuts.add((a, b))
        return pairs

    def isolate(self, index: int) -> set[tuple[int, int]]:
        """Cuts host ``index`` from every other host (e.g. the leader from the majority)."""
        rest = [other for other in range(self.hosts.count) if other != index]
        return self.partition([index], rest)

    def split_halves(self) -> set[tuple[int, int]]:
        """Splits the hosts into :func:`halves` (the first ``count // 2`` and the rest)."""
        return self.partition(*halves(self.hosts.count))

    def heal_partitions(self) -> None:
        for a, b in sorted(self.cuts):
            # Deleting a route that is already gone fails; the heal's goal is reached anyway.
            _run(route_command(self.hosts[a].netns, self.hosts[b].address, add=False),
                 check=False)
        self.cuts.clear()

    # Links -----------------------------------------------------------------------------------

    def link_down(self, index: int) -> None:
        """Takes host ``index``'s link down (cut from every host) until :meth:`heal_links`."""
        self.hosts.link(index, False)
        self.links_down.add(index)

    def start_flap(self, index: int, *, down_seconds: float = 0.5, up_seconds: float = 0.5,
                   cycles: int = 10) -> None:
        """Flaps host ``index``'s link: ``cycles`` times down then up, on a thread of its own."""
        if not 0 < cycles <= MAX_FLAP_CYCLES:
            raise ValueError(f"cycles {cycles} outside 1 .. {MAX_FLAP_CYCLES}")
        if index in self.flaps:
            raise ValueError(f"host {index} already flaps")
        stop = threading.Event()

        def flap() -> None:
            try:
                for _ in range(cycles):
                    self.hosts.link(index, False)
                    if stop.wait(down_seconds):
                        break
                    self.hosts.link(index, True)
                    if stop.wait(up_seconds):
                        break
            finally:
                # Whatever stopped the loop, the link is left up.
                self.hosts.link(index, True)

        thread = threading.Thread(target=flap, name=f"flap-{self.hosts[index].netns}",
                                  daemon=True)
        self.flaps[index] = _Flap(index, thread, stop)
        thread.start()

    def heal_links(self) -> None:
        """Stops every flap (waits for its thread) and brings every link it took down up."""
        for flap in self.flaps.values():
            flap.stop.set()
        for flap in self.flaps.values():
            flap.thread.join(COMMAND_TIMEOUT_SECONDS)
        self.flaps.clear()
        for index in sorted(self.links_down):
            self.hosts.link(index, True)
        self.links_down.clear()

    # Loss and delay --------------------------------------------------------------------------

    def loss(self, index: int, percent: int = 20) -> None:
        """Drops ``percent`` % of the packets host ``index`` sends (nftables)."""
        if not nft_available():
            raise FaultUnsupported("packet loss needs the nft command (package nftables)")
        script = loss_ruleset(percent)
        netns = self.hosts[index].netns
        if index in self.lossy:
            _run(netns_exec(netns, ["nft", "delete", "table", "inet", LOSS_TABLE]))
        _run(netns_exec(netns, ["nft", "-f", "-"]), stdin=script)
        self.lossy.add(index)

    def delay(self, index: int, delay_ms: int = 200, jitter_ms: int = 0) -> None:
        """Delays every packet host ``index`` sends by ``delay_ms`` (netem, else NFQUEUE).

        ``jitter_ms`` adds a uniform ``[-jitter, +jitter]``; netem then reorders packets, the
        NFQUEUE delayer keeps their order. Delaying a host again replaces its delay.
        """
        command = netem_delay_command(self.hosts[index].netns, delay_ms, jitter_ms)
        if index in self.delayed:
            self._heal_delay(index)
        netem = _run(command, check=False)
        if netem.returncode == 0:
            self.delayed.add(index)
            return
        if not iptables_available():
            raise FaultUnsupported(
                f"delay needs netem (sch_netem: {netem.stderr.strip()}) or the NFQUEUE "
                "delayer, which needs the iptables command (package iptables)")
        self.delayers[index] = self._start_delayers(index, delay_ms, jitter_ms)
        self.delayed.add(index)

    def _start_delayers(self, index: int, delay_ms: int,
                        jitter_ms: int) -> dict[int, subprocess.Popen[bytes]]:
        """Starts a delayer on every other host, waits until each has bound, adds the rules."""
        queue = DELAY_QUEUE_BASE + index
        argv = delayer_command(delay_ms, jitter_ms, queue)
        peers = [peer for peer in range(self.hosts.count) if peer != index]
        started = {peer: self.hosts.popen(peer, argv, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE) for peer in peers}
        ruled: list[int] = []
        try:
            silent = [peer for peer, process in started.items() if not _ready(process)]
            if silent:
                raise HostsError(f"the delayer did not start on host {silent[0]}")
            source = self.hosts[index].address
            for peer in peers:
                _run(nfqueue_rule_command(self.hosts[peer].netns, source, queue, add=True))
                ruled.append(peer)
        except HostsError as error:
            printed = self._stop_delayers(index, started, ruled)
            said = "; ".join(f"host {peer}: {text}" for peer, text in printed.items())
            raise FaultUnsupported(f"delay needs netem (sch_netem) or the NFQUEUE delayer: "
                                   f"{error} ({said})") from error
        return started

    def _stop_delayers(self, index: int, delayers: dict[int, subprocess.Popen[bytes]],
                       ruled: Iterable[int]) -> dict[int, str]:
        """Removes the rules first (nothing new is queued), then stops every delayer, which
        accepts what it still holds; returns what each printed."""
        source, queue = self.hosts[index].address, DELAY_QUEUE_BASE + index
        for peer in ruled:
            _run(nfqueue_rule_command(self.hosts[peer].netns, source, queue, add=False),
                 check=False)
        # All signalled first, so they stop at once; each is then waited for.
        for process in delayers.values():
            _terminate(process)
        return {peer: _wait_stopped(process) for peer, process in delayers.items()}

    def _heal_delay(self, index: int) -> None:
        delayers = self.delayers.pop(index, None)
        if delayers is None:
            _run(netns_exec(self.hosts[index].netns,
                            ["tc", "qdisc", "del", "dev", DEVICE, "root"]), check=False)
        else:
            printed = self._stop_delayers(index, delayers, delayers)
            reports: dict[int, dict[str, object]] = {}
            for peer, text in printed.items():
                with contextlib.suppress(ValueError, IndexError):
                    reports[peer] = json.loads(text.splitlines()[-1])
            self.delay_reports[index] = reports
        self.delayed.discard(index)

    def heal_loss_and_delay(self) -> None:
        for index in sorted(self.lossy):
            _run(netns_exec(self.hosts[index].netns,
                            ["nft", "delete", "table", "inet", LOSS_TABLE]), check=False)
        self.lossy.clear()
        for index in sorted(self.delayed):
            self._heal_delay(index)

    def heal_all(self) -> None:
        """Undoes every fault made here: flaps and links, partitions, loss and delay."""
        self.heal_links()
        self.heal_partitions()
        self.heal_loss_and_delay()


def _ready(process: subprocess.Popen[bytes]) -> bool:
    """Whether a delayer printed its ``{"ready": true, ...}`` line (bounded wait)."""
    assert process.stdout is not None
    ready = select.select([process.stdout], [], [], COMMAND_TIMEOUT_SECONDS)[0]
    line = process.stdout.readline() if ready else b""
    return line.startswith(b'{"ready": true')


def _terminate(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGTERM)


def _wait_stopped(process: subprocess.Popen[bytes]) -> str:
    """Waits for a process sent SIGTERM (SIGKILL, by its PID, if it lingers); what it
    printed."""
    try:
        out, err = process.communicate(timeout=DELAYER_STOP_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
        out, err = process.communicate(timeout=DELAYER_STOP_SECONDS)
    text = (out or b"").decode(errors="replace").strip()
    problem = (err or b"").decode(errors="replace").strip()
    return text or problem or f"exit {process.returncode}"
