"""The processes of a LocalCluster's nodes: their ports, their private files, how each is
started with its log, and the record of one controller or broker process.

Kept apart from :mod:`chunkraft.local.local_cluster` (which prepares and runs a whole cluster)
so that the one-node pieces have one home; that module re-exports what its users import.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from chunkraft.local.ports import free_ports

__all__ = [
    "BrokerProcess",
    "ControllerProcess",
    "free_ports",
    "log_tail",
    "spawn_node",
    "write_private",
]


def write_private(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` readable by its owner only, from its first byte.

    The file is created with mode 0600 (an existing one is emptied, then narrowed, before the
    text goes in), so a secret is never in a world-readable file, not even until a later
    chmod, and not if the process dies half-way.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        os.fchmod(fd, 0o600)
        file.write(text)


def spawn_node(role: str, config_path: Path, log_path: Path, label: str
           ) -> subprocess.Popen[bytes]:
    """``chunkraft <role> --config <config_path>`` in a session of its own, its output appended
    to its log after a line marking the start (see :func:`_open_log`)."""
    with _open_log(log_path, label) as log:
        return subprocess.Popen(
            [sys.executable, "-m", "chunkraft", role, "--config", str(config_path)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)


def _open_log(path: Path, name: str) -> BinaryIO:
    """``path`` opened to append (created if missing, never truncated), after a line that
    marks where this start of ``name`` begins, for a child's stdout and stderr.

    O_APPEND: every write of the child lands at the end of the file, so the output of a node
    started again (after a stop, a kill or a crash) follows its earlier runs' output, and a
    restart by hand with ``>> LOG`` interleaves safely with nothing lost."""
    path.parent.mkdir(parents=True, exist_ok=True)
    log = path.open("ab")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    log.write(f"=== {stamp} {name} started by chunkraft (LocalCluster) ===\n".encode())
    log.flush()  # before the child's own writes, which bypass this buffer
    return log


def log_tail(path: Path, lines: int = 3, width: int = 240, window: int = 16384) -> str:
    """The last ``lines`` non-empty lines of a node's log joined by `` | ``, each cut to
    ``width`` characters (read from its last ``window`` bytes): what a timeout names."""
    try:
        with path.open("rb") as log:
            log.seek(max(log.seek(0, os.SEEK_END) - window, 0))
            text = log.read().decode("utf-8", errors="replace")
    except OSError as error:
        return f"(unreadable: {error.strerror})"
    last = [line[:width] for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(last) if last else "(empty)"


class _NodeProcess:
    """What a controller and a broker process answer alike: their URL, and whether they run."""

    http_port: int
    process: subprocess.Popen[bytes] | None
    scheme: str

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.http_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class ControllerProcess(_NodeProcess):
    """One controller node of a LocalCluster; ``process`` is None while it is stopped."""

    node_id: int
    raft_port: int
    http_port: int
    data_dir: Path
    config_path: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    scheme: str = "http"
    kafka_port: int = 0
    """The port of its Kafka listener (0: none)."""


@dataclass
class BrokerProcess(_NodeProcess):
    """One broker agent of a LocalCluster; ``process`` is None while it is stopped."""

    broker_id: int
    http_port: int
    log_dir: Path
    config_path: Path
    log_path: Path
    token_path: Path
    process: subprocess.Popen[bytes] | None = None
    scheme: str = "http"
    kafka_port: int = 0
    """The port of its Kafka listener (0: none)."""
