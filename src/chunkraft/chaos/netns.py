"""Hosts on network namespaces: a private bridge and one namespace per host, for chaos tests.

:class:`Hosts` (a context manager; root only) makes a Linux bridge and ``count`` network
namespaces. Each namespace has its loopback up and one veth whose peer is attached to the
bridge; inside, the veth is renamed ``eth0`` and carries the host's address, ``198.18.<k>.<i+1>/24``
(hosts ``i`` = 0 .. count-1). ``198.18.0.0/15`` is reserved for network benchmarks and tests
(RFC 2544), so it meets no real network.

Why traffic never leaves what the harness made: a namespace has no default route (only its
connected /24), the bridge has no uplink and no address, so the host itself neither routes nor
answers for the subnet, and nothing sets up NAT.

Names: every object carries the harness's prefix ``ckr<k:03x>`` (``k`` in 0 .. 511 picks the
/24 inside the /15, so prefix and subnet are unique together): namespaces ``<prefix>-<i>``, the
bridge ``<prefix>-br``, the host-side veths ``<prefix>-v<i>``; all under the 15 bytes an
interface name may hold. The harness writes its PID to ``/run/chunkraft-netns/<prefix>.pid``.
At start it removes the objects of every ``ckr`` prefix whose owner is gone (no PID file, or a
dead PID), so a harness killed with SIGKILL is cleaned by the next one, while a harness
running beside it in another process is left alone.

Processes: :meth:`Hosts.popen` runs a command inside a host's namespace with
``ip netns exec`` (which execs the command in place, so the Popen's PID is the command's) and
remembers it; on exit the harness stops the processes it started, by PID (SIGTERM, then
SIGKILL), before it removes the namespaces. Not thread-safe: one thread drives a harness.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = [
    "NAME_PREFIX",
    "TEST_NETWORK",
    "Host",
    "Hosts",
    "HostsError",
    "Layout",
    "kernel_names",
    "leftover_prefixes",
    "netns_exec",
]

TEST_NETWORK = ipaddress.IPv4Network("198.18.0.0/15")
NAME_PREFIX = "ckr"
SUBNETS = TEST_NETWORK.num_addresses // 256
MAX_HOSTS = 250
OWNER_DIR = Path("/run/chunkraft-netns")
NETNS_DIR = Path("/run/netns")
IFNAMSIZ = 15
STOP_GRACE_SECONDS = 3.0
COMMAND_TIMEOUT_SECONDS = 20.0
CLAIM_ATTEMPTS = 8
_PREFIX_RE = re.compile(rf"^({NAME_PREFIX}[0-9a-f]{{3}})-")


class HostsError(RuntimeError):
    """A command that builds, changes or removes the harness's network failed."""


@dataclass(frozen=True)
class Host:
    """One host: its index, namespace, address and the bridge-side veth (immutable)."""

    index: int
    netns: str
    address: str
    veth: str
    """The host-side end of the veth pair, attached to the bridge (``eth0`` is the other)."""


@dataclass(frozen=True)
class Layout:
    """The names and addresses of a harness with subnet number ``k``; pure, no side effects."""

    k: int
    count: int

    def __post_init__(self) -> None:
        if not 0 <= self.k < SUBNETS:
            raise ValueError(f"subnet number {self.k} outside 0 .. {SUBNETS - 1}")
        if not 1 <= self.count <= MAX_HOSTS:
            raise ValueError(f"host count {self.count} outside 1 .. {MAX_HOSTS}")

    @property
    def prefix(self) -> str:
        return f"{NAME_PREFIX}{self.k:03x}"

    @property
    def subnet(self) -> ipaddress.IPv4Network:
        base = int(TEST_NETWORK.network_address) + 256 * self.k
        return ipaddress.IPv4Network((base, 24))

    @property
    def bridge(self) -> str:
        return f"{self.prefix}-br"

    def host(self, index: int) -> Host:
        if not 0 <= index < self.count:
            raise IndexError(index)
        address = str(self.subnet.network_address + index + 1)
        return Host(index, f"{self.prefix}-{index}", address, f"{self.prefix}-v{index}")

    @property
    def hosts(self) -> list[Host]:
        return [self.host(index) for index in range(self.count)]

    def names(self) -> list[str]:
        """Every interface name this layout makes (each fits in IFNAMSIZ)."""
        return [self.bridge, *(host.veth for host in self.hosts)]

    def setup_commands(self) -> list[list[str]]:
        """The ``ip`` commands that build the network, in order."""
        commands: list[list[str]] = [
            ["ip", "link", "add", self.bridge, "type", "bridge"],
            ["ip", "link", "set", self.bridge, "up"],
        ]
        for host in self.hosts:
            # The veth is made inside the namespace's side from the start (``peer netns``), so
            # no interface named eth0 ever appears in the host's own namespace.
            commands += [
                ["ip", "netns", "add", host.netns],
                ["ip", "link", "add", host.veth, "type", "veth", "peer", "name", "eth0",
                 "netns", host.netns],
                ["ip", "link", "set", host.veth, "master", self.bridge],
                ["ip", "link", "set", host.veth, "up"],
                ["ip", "-n", host.netns, "link", "set", "lo", "up"],
                ["ip", "-n", host.netns, "addr", "add", f"{host.address}/24", "dev", "eth0"],
                ["ip", "-n", host.netns, "link", "set", "eth0", "up"],
            ]
        return commands


def netns_exec(netns: str, argv: Sequence[str]) -> list[str]:
    """The argv that runs ``argv`` inside namespace ``netns`` (the command keeps its PID)."""
    if not argv:
        raise ValueError("empty command")
    return ["ip", "netns", "exec", netns, *argv]


def _run(argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(list(argv), capture_output=True, text=True, check=False,
                            timeout=COMMAND_TIMEOUT_SECONDS)
    if check and result.returncode != 0:
        raise HostsError(f"{' '.join(argv)}: exit {result.returncode}: {result.stderr.strip()}")
    return result


def kernel_names(prefix: str) -> list[str]:
    """Network namespaces and links whose name holds ``prefix``: what a harness must have
    removed once it is closed (tests check that nothing is left)."""
    links = _run(["ip", "-o", "link", "show"]).stdout
    netns = [entry.name for entry in NETNS_DIR.iterdir()] if NETNS_DIR.is_dir() else []
    return [name for name in [*netns, *links.split()] if prefix in name]


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (a harness's owner check for leftovers)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _existing_prefixes() -> dict[str, list[str]]:
    """Prefix -> the namespaces and links that carry it, as the kernel sees them now."""
    found: dict[str, list[str]] = {}
    names = [entry.name for entry in NETNS_DIR.iterdir()] if NETNS_DIR.is_dir() else []
    links = _run(["ip", "-o", "link", "show"], check=False).stdout
    names += [line.split(":")[1].strip().split("@")[0] for line in links.splitlines()
              if line.count(":") >= 2]
    for name in names:
        match = _PREFIX_RE.match(name)
        if match:
            found.setdefault(match.group(1), []).append(name)
    return found


def _owner(prefix: str) -> int | None:
    try:
        return int((OWNER_DIR / f"{prefix}.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def leftover_prefixes() -> list[str]:
    """Prefixes whose objects exist but whose owning harness process is gone."""
    return sorted(prefix for prefix in _existing_prefixes()
                  if (owner := _owner(prefix)) is None or not pid_alive(owner))


REMOVAL_WAIT = 10.0
"""Seconds to wait for the kernel to finish removing a prefix's objects."""


def _remove_prefix(prefix: str) -> None:
    """Deletes every namespace and link of ``prefix`` (deleting a namespace deletes its veth),
    and waits until the kernel shows none of them: it tears a namespace's devices down in the
    background, so a busy host still listed the veths of a deleted namespace for a while (a
    harness that checked right after saw them: test_netns under load)."""
    deadline = time.monotonic() + REMOVAL_WAIT
    while True:
        names = _existing_prefixes().get(prefix, [])
        if not names or time.monotonic() > deadline:
            break
        for name in names:
            if (NETNS_DIR / name).exists():
                _run(["ip", "netns", "del", name], check=False)
            else:
                _run(["ip", "link", "del", name], check=False)
        time.sleep(0.1)
    with contextlib.suppress(FileNotFoundError):
        (OWNER_DIR / f"{prefix}.pid").unlink()


def _host_networks() -> list[ipaddress.IPv4Network]:
    """The IPv4 networks of the host's own namespace: its addresses and its routes."""
    text = _run(["ip", "-4", "-o", "addr", "show"], check=False).stdout
    text += _run(["ip", "-4", "route", "show"], check=False).stdout
    return [ipaddress.IPv4Network(token, strict=False)
            for token in re.findall(r"\d+\.\d+\.\d+\.\d+(?:/\d+)?", text)]


@dataclass
class Hosts:
    """``count`` hosts on a private bridge; a context manager (see the module docstring).

    Contract: inside the ``with`` block every host reaches every other host at
    :attr:`Host.address` and nothing else; on exit (also after an exception) every process
    started through :meth:`popen` is stopped and every namespace, veth and the bridge are gone.
    ``k`` picks the subnet (random among the free ones when None). Not thread-safe.
    """

    count: int = 3
    k: int | None = None
    layout: Layout = field(init=False)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list, init=False)
    _entered: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if os.geteuid() != 0:
            raise HostsError("network namespaces need root")
        for prefix in leftover_prefixes():
            _remove_prefix(prefix)
        self.layout = Layout(self._free_k() if self.k is None else self.k, self.count)

    def _free_k(self) -> int:
        taken = set(_existing_prefixes())
        if OWNER_DIR.is_dir():
            taken |= {path.stem for path in OWNER_DIR.glob(f"{NAME_PREFIX}*.pid")}
        used = _host_networks()
        candidates = [k for k in range(SUBNETS) if Layout(k, 1).prefix not in taken]
        random.shuffle(candidates)
        for k in candidates:
            subnet = Layout(k, 1).subnet
            if not any(network.overlaps(subnet) for network in used):
                return k
        raise HostsError("no free subnet in 198.18.0.0/15")

    @property
    def prefix(self) -> str:
        return self.layout.prefix

    @property
    def hosts(self) -> list[Host]:
        return self.layout.hosts

    def __getitem__(self, index: int) -> Host:
        return self.layout.host(index)

    def __enter__(self) -> Hosts:
        OWNER_DIR.mkdir(parents=True, exist_ok=True)
        # A random subnet another harness claimed a moment ago is traded for another one.
        for _ in range(CLAIM_ATTEMPTS):
            if self._claim():
                break
            if self.k is not None:
                raise HostsError(f"prefix {self.prefix} is taken")
            self.layout = Layout(self._free_k(), self.count)
        else:
            raise HostsError(f"no free prefix after {CLAIM_ATTEMPTS} attempts")
        self._entered = True
        try:
            for argv in self.layout.setup_commands():
                _run(argv)
        except BaseException:
            self.close()
            raise
        return self

    def _claim(self) -> bool:
        """Writes our PID as the owner of the prefix; False if a live harness owns it.

        Claimed before anything is made: a harness starting in parallel sees the prefix as
        owned (alive) and neither picks it nor cleans it.
        """
        owner_file = OWNER_DIR / f"{self.prefix}.pid"
        for _ in range(2):
            try:
                fd = os.open(owner_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                owner = _owner(self.prefix)
                if owner is not None and pid_alive(owner):
                    return False
                # Its owner died after the claim (maybe before it made anything): stale.
                with contextlib.suppress(FileNotFoundError):
                    owner_file.unlink()
                continue
            with os.fdopen(fd, "w") as file:
                file.write(f"{os.getpid()}\n")
            return True
        return False

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Stops the harness's processes, then removes its namespaces, veths and bridge."""
        for process in self.processes:
            self._stop(process)
        self.processes.clear()
        if self._entered:
            _remove_prefix(self.prefix)
            self._entered = False

    @staticmethod
    def _stop(process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                process.wait(STOP_GRACE_SECONDS)
        # The pipes asked for are the harness's too: closed here, not left to the collector.
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()

    def command(self, index: int, argv: Sequence[str]) -> list[str]:
        """The argv that runs ``argv`` on host ``index``."""
        return netns_exec(self[index].netns, argv)

    def popen(self, index: int, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        """Starts ``argv`` on host ``index``; the harness stops it on exit (by its PID)."""
        process: subprocess.Popen[bytes] = subprocess.Popen(self.command(index, argv), **kwargs)
        self.processes.append(process)
        return process

    def run(self, index: int, argv: Sequence[str], *, timeout: float = COMMAND_TIMEOUT_SECONDS,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        """Runs ``argv`` on host ``index`` to completion (bounded by ``timeout``)."""
        return subprocess.run(self.command(index, argv), capture_output=True, text=True,
                              timeout=timeout, check=check)

    def ip(self, index: int, *args: str) -> None:
        """Runs ``ip -n <netns> args...`` for host ``index``; raises HostsError on failure."""
        _run(["ip", "-n", self[index].netns, *args])

    def link(self, index: int, up: bool) -> None:
        """Sets host ``index``'s bridge-side veth up or down (down cuts it from every host)."""
        _run(["ip", "link", "set", self[index].veth, "up" if up else "down"])

    def probe(self, source: int, target: int, *, timeout: float = 1.0) -> float | None:
        """One TCP handshake attempt from ``source`` to ``target``: its round trip, or None.

        It connects to the discard port (9), where nothing listens: a refusal (RST) proves the
        path works both ways as well as an accept would, and needs no server.
        """
        code = (
            "import socket,sys,time\n"
            "s=socket.socket();s.settimeout(float(sys.argv[2]))\n"
            "t=time.monotonic()\n"
            "try:\n s.connect((sys.argv[1],9))\n"
            "except ConnectionRefusedError:\n pass\n"
            "except OSError:\n sys.exit(1)\n"
            "print(time.monotonic()-t)\n")
        result = self.run(source, [sys.executable, "-c", code, self[target].address,
                                   str(timeout)], timeout=timeout + 10.0)
        if result.returncode != 0:
            return None
        return float(result.stdout.strip())

    def wait_reachable(self, source: int, target: int, *, timeout: float = 10.0) -> bool:
        """Probes ``target`` from ``source`` until it answers or ``timeout``; True on an answer."""
        deadline = time.monotonic() + timeout
        for _ in range(int(timeout * 4) + 1):
            if self.probe(source, target) is not None:
                return True
            if time.monotonic() >= deadline:
                break
            time.sleep(0.25)
        return False
