"""chunkraft.local.ports: ports drawn below the ephemeral range, never handed out twice within
the reservation, by this process or another."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from chunkraft.local import ports as ports_module
from chunkraft.local.ports import PORT_FLOOR, free_ports


@pytest.fixture(autouse=True)
def own_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def ephemeral_start() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_ports_are_drawn_below_the_range_the_kernel_takes_source_ports_from() -> None:
    drawn = free_ports(30)
    assert len(set(drawn)) == 30
    assert all(PORT_FLOOR <= port < ephemeral_start() for port in drawn), drawn


def test_a_port_handed_out_is_not_handed_out_again_by_any_process(own_registry: Path) -> None:
    first = free_ports(50)
    script = ("import json, tempfile, sys; tempfile.tempdir = sys.argv[1]; "
              "from chunkraft.local.ports import free_ports; print(json.dumps(free_ports(50)))")
    done = subprocess.run([sys.executable, "-c", script, str(own_registry)],
                          capture_output=True, text=True, timeout=60, check=True)
    second = [int(port) for port in done.stdout.strip().strip("[]").split(",")]
    third = free_ports(50)
    assert len(set(first) | set(second) | set(third)) == 150


def test_a_reservation_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports_module, "RESERVED_S", 0.0)
    free_ports(5)
    registry = next(Path(tempfile.gettempdir()).glob("chunkraft-ports-*.json"))
    free_ports(5)
    assert len(registry.read_text().split(",")) == 5  # only the last call's are kept


def test_a_port_in_use_is_not_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        port = busy.getsockname()[1]
        monkeypatch.setattr(ports_module, "_drawable_range", lambda: (port, port + 1))
        monkeypatch.setattr(ports_module, "_MIN_ROOM", 0)
        with pytest.raises(OSError, match=rf"no 1 free ports in \[{port}, {port + 1}\)"):
            free_ports(1)


def test_a_torn_registry_is_an_empty_one() -> None:
    free_ports(1)
    registry = next(Path(tempfile.gettempdir()).glob("chunkraft-ports-*.json"))
    registry.write_text('{"2')
    assert len(free_ports(3)) == 3


def test_without_room_below_the_ephemeral_range_the_kernel_chooses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports_module, "_drawable_range", lambda: (PORT_FLOOR, PORT_FLOOR + 10))
    drawn = free_ports(4)
    assert len(set(drawn)) == 4 and all(port >= 1024 for port in drawn)
