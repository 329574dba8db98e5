"""Three etcd 3.4 members on 127.0.0.1 (Debian's etcd-server), fsync on, for comparisons.

``apt-get install -y etcd-server`` provides ``/usr/bin/etcd`` (3.4.x); :func:`ensure_etcd`
installs it when it is missing and this process may (root). Members run in a temporary
directory with etcd's defaults (fsync on every commit, 100 ms heartbeat, 1 s election); only
processes started here are ever signalled, by PID.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from chunkraft.local.local_cluster import free_ports
from chunkraft.local.steady_leader import LeadershipSample, NodeLeadership

__all__ = ["EtcdCluster", "ensure_etcd", "etcd_version", "member_leadership"]

LEADER_CHANGES = re.compile(r"^etcd_server_leader_changes_seen_total\s+(\S+)\s*$", re.MULTILINE)
"""etcd's count of the changes of leader a member saw (its ``/metrics``, the first included)."""


def ensure_etcd() -> str | None:
    """The etcd binary's path, installing the Debian package if needed; None if unavailable."""
    path = shutil.which("etcd")
    if path is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "etcd-server"], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
        path = shutil.which("etcd")
    return path


def member_leadership(status: dict[str, object] | None, metrics: str) -> NodeLeadership | None:
    """What one member says of the leadership, in chunkraft's terms, or None without a status.

    From ``/v3/maintenance/status``: ``leader`` (a member id, "0" for none) and ``raftTerm``
    (uint64s, which the JSON gateway sends as strings); from ``/metrics``: the changes of
    leader it saw (0 when the metric is missing: the term alone then shows a move). The term
    stands for ``term_increments`` too: only its rise over a window is compared."""
    if status is None:
        return None
    try:
        leader, term = int(str(status.get("leader", 0))), int(str(status["raftTerm"]))
    except (KeyError, ValueError):
        return None
    found = LEADER_CHANGES.search(metrics)
    try:
        changes = int(float(found.group(1))) if found else 0
    except ValueError:
        changes = 0
    return NodeLeadership(leader or None, term, changes, term)


def etcd_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    return out.stdout.splitlines()[0] if out.stdout else "unknown"


@dataclass
class EtcdCluster:
    base_dir: Path
    binary: str = "etcd"
    size: int = 3
    processes: dict[int, subprocess.Popen[bytes] | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ports = free_ports(2 * self.size)
        self.client_ports = ports[: self.size]
        self.peer_ports = ports[self.size:]
        self.names = [f"m{i + 1}" for i in range(self.size)]

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.client_ports]

    def _command(self, index: int, state: str) -> list[str]:
        cluster = ",".join(f"{name}=http://127.0.0.1:{port}"
                           for name, port in zip(self.names, self.peer_ports, strict=True))
        client = f"http://127.0.0.1:{self.client_ports[index]}"
        peer = f"http://127.0.0.1:{self.peer_ports[index]}"
        return [self.binary, "--name", self.names[index],
                "--data-dir", str(self.base_dir / self.names[index]),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", cluster, "--initial-cluster-state", state,
                "--initial-cluster-token", "chunkraft-bench", "--log-level", "warn",
                "--logger", "zap"]

    def start(self, index: int | None = None, state: str = "new") -> None:
        for i in [index] if index is not None else range(self.size):
            log = (self.base_dir / f"{self.names[i]}.log").open("ab")
            self.processes[i] = subprocess.Popen(self._command(i, state), stdout=log,
                                                 stderr=subprocess.STDOUT,
                                                 stdin=subprocess.DEVNULL)
            log.close()

    def pid(self, index: int) -> int | None:
        process = self.processes.get(index)
        return process.pid if process is not None else None

    def kill(self, index: int) -> None:
        process = self.processes.get(index)
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            process.wait(timeout=10)
            self.processes[index] = None

    def stop(self) -> None:
        for process in self.processes.values():
            if process is not None and process.poll() is None:
                process.terminate()
        for i, process in list(self.processes.items()):
            if process is None:
                continue
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
            self.processes[i] = None

    def status(self, index: int) -> dict[str, object] | None:
        try:
            answer = httpx.post(f"{self.urls[index]}/v3/maintenance/status", json={},
                                timeout=2.0)
            return dict(answer.json()) if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    def metrics(self, index: int) -> str:
        """The member's ``/metrics`` text, or "" when it does not answer."""
        try:
            answer = httpx.get(f"{self.urls[index]}/metrics", timeout=2.0, trust_env=False)
            return answer.text if answer.status_code == 200 else ""
        except httpx.HTTPError:
            return ""

    def leadership(self) -> LeadershipSample:
        """Every running member's view of the leadership (``bench/_steady.py``'s sampler);
        a member that does not answer is left out. Node ids are member indexes."""
        nodes: dict[int, NodeLeadership] = {}
        for i in range(self.size):
            process = self.processes.get(i)
            if process is None or process.poll() is not None:
                continue
            seen = member_leadership(self.status(i), self.metrics(i))
            if seen is not None:
                nodes[i] = seen
        return LeadershipSample(nodes)

    def leader_index(self, timeout: float = 30.0) -> int:
        """The index of the member every running member names as leader."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leaders: set[str | None] = set()
            ids: dict[str, int] = {}
            for i in range(self.size):
                process = self.processes.get(i)
                if process is None or process.poll() is not None:
                    continue
                status = self.status(i)
                if status is None:
                    leaders.add(None)
                    continue
                header = status.get("header")
                if isinstance(header, dict):
                    ids[str(header.get("member_id"))] = i
                leaders.add(str(status.get("leader")))
            if len(leaders) == 1:
                leader = leaders.pop()
                if leader in ids:
                    return ids[leader]
            time.sleep(0.1)
        raise TimeoutError("etcd has no agreed leader")

    def __enter__(self) -> EtcdCluster:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
