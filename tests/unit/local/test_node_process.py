"""chunkraft.local.node_process: ports, private files and node processes' logs."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

from chunkraft.local.node_process import free_ports, log_tail, write_private


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(12)
    assert len(ports) == len(set(ports)) == 12
    assert all(1024 <= port <= 65535 for port in ports)
    for port in ports[:3]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # released again, so usable


def test_a_private_file_is_owner_only_even_when_it_existed_open_to_all(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text("old, longer text")
    path.chmod(0o644)
    write_private(path, "new")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_free_ports_never_repeat_a_port_to_avoid() -> None:
    first = free_ports(20)
    assert len(set(first)) == 20
    again = free_ports(200, avoid=first)
    assert len(set(again)) == 200 and not set(again) & set(first)


def test_a_logs_tail_is_its_last_lines_cut_to_width_or_says_why_not(tmp_path: Path) -> None:
    log = tmp_path / "node.log"
    assert log_tail(log).startswith("(unreadable: ")
    log.write_text("")
    assert log_tail(log) == "(empty)"
    log.write_text("first\n\nsecond\n" + "x" * 500 + "\n   \nlast\n")
    assert log_tail(log) == "second | " + "x" * 240 + " | last"
    assert log_tail(log, lines=1) == "last"
    log.write_text("a\n" * 10_000 + "end\n")
    assert log_tail(log, lines=2, window=100) == "a | end"
