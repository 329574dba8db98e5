"""Ports for a local cluster's listeners, chosen so that nothing else on the host takes them
between the choice and the node's bind.

A port the kernel hands out for ``bind(0)`` comes from the ephemeral range, the range it also
takes the source port of every outgoing connection from: released so that the node can bind it,
it may become the source port of some other client's connection first, and the node then cannot
listen on it for as long as that connection lives (a Raft listener retries, and its node is
never ready). So ports are drawn at random below the ephemeral range (``[20000, low)`` with the
range ``/proc/sys/net/ipv4/ip_local_port_range`` gives, 32768 to 60999 by default), where the
kernel never picks one on its own, and each is checked by a bind.

Launchers running at the same time (tests in parallel, two clusters on one machine) could still
draw the same port: each port handed out is recorded, under an exclusive lock, in a file of
this user's temp dir and not handed out again for :data:`RESERVED_S` seconds, by any process.
Where the ephemeral range leaves no room below it, the kernel's ``bind(0)`` is used instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import socket
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

__all__ = ["RESERVED_S", "free_ports"]

PORT_FLOOR = 20000
"""The lowest port drawn: above the registered ports most services use."""
RESERVED_S = 300.0
"""How long a port handed out is not handed out again, to any launcher of this user."""
_MIN_ROOM = 2000
"""Fewer ports than this below the ephemeral range: draw with ``bind(0)`` instead."""
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_ports(count: int, host: str = "127.0.0.1", avoid: Iterable[int] = ()) -> list[int]:
    """``count`` distinct ports that were free a moment ago, none of them in ``avoid`` nor
    handed out by any launcher of this user in the last :data:`RESERVED_S` seconds.

    Ports handed out earlier are free again once released, so a caller passes the ones its
    nodes already have as ``avoid``. OSError if not enough are found (bounded attempts)."""
    taken = set(avoid)
    low, high = _drawable_range()
    with _registry() as reserved:
        now = time.time()
        for port in [port for port, at in reserved.items() if not 0 <= now - at < RESERVED_S]:
            del reserved[port]
        blocked = taken | set(reserved)
        if high - low < _MIN_ROOM:
            ports = _kernel_ports(count, host, blocked)
        else:
            ports = _drawn_ports(count, host, low, high, blocked)
        reserved.update(dict.fromkeys(ports, now))
    return ports


def _drawable_range() -> tuple[int, int]:
    """``[low, high)``: from :data:`PORT_FLOOR` to the start of the ephemeral range."""
    try:
        start = int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        start = 32768
    return PORT_FLOOR, start


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _drawn_ports(count: int, host: str, low: int, high: int, avoid: set[int]) -> list[int]:
    ports: list[int] = []
    for _ in range(50 * count + 100):  # bounded: a busy range fails rather than spins
        if len(ports) == count:
            return ports
        port = random.randrange(low, high)
        if port not in avoid and port not in ports and _bindable(host, port):
            ports.append(port)
    if len(ports) < count:
        raise OSError(f"no {count} free ports in [{low}, {high}) outside {len(avoid)} taken "
                      "ones")
    return ports


def _kernel_ports(count: int, host: str, avoid: set[int]) -> list[int]:
    """The kernel's choice (``bind(0)``, every socket held until all are chosen)."""
    sockets: list[socket.socket] = []
    ports: list[int] = []
    try:
        for _ in range(count + len(avoid) + 64):  # bounded: each bind holds its port
            if len(ports) == count:
                break
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
            port = sock.getsockname()[1]
            if port not in avoid:
                ports.append(port)
        if len(ports) < count:
            raise OSError(f"no {count} free ports outside {len(avoid)} taken ones")
    finally:
        for sock in sockets:
            sock.close()
    return ports


@contextlib.contextmanager
def _registry() -> Iterator[dict[int, float]]:
    """The ports handed out recently (port -> time), read and written back under an exclusive
    lock; a missing or unreadable file is an empty registry."""
    path = Path(tempfile.gettempdir()) / f"chunkraft-ports-{os.getuid()}.json"
    with _locked(path) as file:
        try:
            reserved = {int(port): float(at) for port, at in json.loads(file.read()).items()}
        except (ValueError, AttributeError, TypeError):
            reserved = {}
        yield reserved
        file.seek(0)
        file.truncate()
        file.write(json.dumps({str(port): at for port, at in reserved.items()}))
        file.flush()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[IO[str]]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(fd, "r+", encoding="utf-8") as file:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield file
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
