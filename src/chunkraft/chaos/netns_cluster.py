"""NetnsCluster: a LocalCluster whose controllers each run on a host of :class:`Hosts`.

Controller ``i + 1`` runs in host ``i``'s namespace and binds its Raft and HTTP ports on that
host's address (the same port numbers on every host: each namespace has its own ports), so the
controllers talk over the harness's bridge and a network fault between hosts is a fault between
controllers. LocalCluster itself is unchanged: this subclass gives each node a bind host and
names the voters by those hosts (``controller.quorum.voters`` through ``extra_properties``,
which LocalCluster writes last).

The test process stays in the host's own namespace, which has no route to the hosts. It looks
at the controllers through an *observer* host (by default the first host after the
controllers): a short Python script run there asks every node for ``/controller/v1/quorum``.
Keep the observer out of a partition's groups and it sees both sides, as Jepsen's control node
does. Brokers and TLS are not supported here (certificates name 127.0.0.1). Not thread-safe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from chunkraft.chaos.netns import Hosts
from chunkraft.local.local_cluster import ControllerProcess, LocalCluster

__all__ = ["NetnsCluster", "NetnsControllerProcess"]

RAFT_PORT = 9093
HTTP_PORT = 9092

# Standard library only: it starts in tens of milliseconds, which bounds how fast a test sees
# a change. Reads {"urls": {node: url}, "headers": {...}, "timeout": s} from stdin (the token
# stays out of the process list) and prints {node: quorum answer or null}.
_OBSERVE = textwrap.dedent("""
    import json, sys, urllib.request
    request = json.load(sys.stdin)
    answers = {}
    for node, url in request["urls"].items():
        try:
            req = urllib.request.Request(url + "/controller/v1/quorum" + request["query"],
                                         headers=request["headers"])
            with urllib.request.urlopen(req, timeout=request["timeout"]) as response:
                answers[node] = json.load(response)
        except Exception:
            answers[node] = None
    print(json.dumps(answers))
""")


@dataclass
class NetnsControllerProcess(ControllerProcess):
    """A controller node bound to ``host`` inside namespace ``netns``."""

    host: str = "127.0.0.1"
    netns: str = ""

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.http_port}"


@dataclass
class NetnsCluster(LocalCluster):
    """``size`` controllers on hosts 0 .. size-1 of ``hosts``; see the module docstring.

    Contract: as LocalCluster's (every process it starts is stopped by its PID), and each
    process is also handed to ``hosts``, so leaving the Hosts block stops any the cluster did
    not. ``observer`` (default ``size``) must be a host index outside the controllers'.
    """

    hosts: Hosts | None = None
    observer: int | None = None
    broker_count: int = 0
    OBSERVE_TIMEOUT: ClassVar[float] = 1.0

    def __post_init__(self) -> None:
        if self.hosts is None:
            raise ValueError("NetnsCluster needs hosts")
        if self.tls or self.broker_count:
            raise ValueError("NetnsCluster runs controllers only, without TLS")
        observer = self.size if self.observer is None else self.observer
        if not self.size <= observer < self.hosts.count:
            raise ValueError(f"hosts has {self.hosts.count} hosts: {self.size} controllers "
                             f"and an observer ({observer}) do not fit")
        self.observer = observer
        if not self.nodes:
            for index in range(self.size):
                node_id = index + 1
                host = self.hosts[index]
                node_dir = self.base_dir / f"controller-{node_id}"
                self.nodes[node_id] = NetnsControllerProcess(
                    node_id, RAFT_PORT, HTTP_PORT, node_dir / "data",
                    node_dir / "controller.properties", node_dir / "controller.log",
                    host=host.address, netns=host.netns)
        voters = ",".join(f"{node_id}@{self._node(node_id).host}:{RAFT_PORT}"
                          for node_id in self.nodes)
        self.extra_properties = {"controller.quorum.voters": voters, **self.extra_properties}
        super().__post_init__()

    def _node(self, node_id: int) -> NetnsControllerProcess:
        node = self.nodes[node_id]
        assert isinstance(node, NetnsControllerProcess)
        return node

    def host_index(self, node_id: int) -> int:
        """The host (index into ``hosts``) controller ``node_id`` runs on."""
        return node_id - 1

    def start(self, node_id: int | None = None) -> None:
        """Starts one node, or every stopped node, each inside its host's namespace."""
        assert self.hosts is not None
        targets = [node_id] if node_id is not None else list(self.nodes)
        for target in targets:
            node = self._node(target)
            if node.running:
                continue
            with node.log_path.open("ab") as log:
                node.process = self.hosts.popen(
                    self.host_index(target),
                    [sys.executable, "-m", "chunkraft", "controller", "--config",
                     str(node.config_path)],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)

    def statuses(self, node_ids: list[int] | None = None, *, with_hash: bool = False
                 ) -> dict[int, dict[str, Any] | None]:
        """Each node's ``/controller/v1/quorum`` answer (None if it did not answer), as the
        observer host sees them; ``with_hash`` adds each node's ``image_hash``."""
        assert self.hosts is not None and self.observer is not None
        targets = list(self.nodes) if node_ids is None else node_ids
        request = {"urls": {str(n): self.nodes[n].url for n in targets},
                   "headers": self.headers, "timeout": self.OBSERVE_TIMEOUT,
                   "query": "?hash=true" if with_hash else ""}
        result = subprocess.run(self.hosts.command(self.observer, [sys.executable, "-c",
                                                                   _OBSERVE]),
                                input=json.dumps(request), capture_output=True, text=True,
                                timeout=self.OBSERVE_TIMEOUT * len(targets) + 10, check=True)
        answers: dict[str, dict[str, Any] | None] = json.loads(result.stdout)
        return {int(node): answer for node, answer in answers.items()}

    def status(self, node_id: int, timeout: float = 2.0) -> dict[str, object] | None:
        return self.statuses([node_id])[node_id]

    def leader_views(self) -> dict[int, int | None]:
        """Which leader each running node that answers names (None: it knows none)."""
        running = [n for n, node in self.nodes.items() if node.running]
        views: dict[int, int | None] = {}
        for node_id, answer in self.statuses(running).items():
            if answer is not None:
                leader = answer.get("leader_id")
                views[node_id] = leader if isinstance(leader, int) else None
        return views

    def leader_id(self, timeout: float = 2.0) -> int | None:
        """The leader every running node that answers agrees on, or None."""
        seen = set(self.leader_views().values())
        if len(seen) == 1:
            return seen.pop()
        return None

    def wait_leader(self, node_ids: list[int], *, timeout: float = 30.0,
                    exclude: int | None = None) -> int:
        """Waits until every node of ``node_ids`` names one leader among them (not
        ``exclude``); returns it. TimeoutError with the last views otherwise."""
        deadline = time.monotonic() + timeout
        views: dict[int, int | None] = {}
        for _ in range(int(timeout / 0.1) + 1):
            for node_id in node_ids:
                process = self.nodes[node_id].process
                if process is not None and process.poll() is not None:
                    raise RuntimeError(f"controller {node_id} exited with status "
                                       f"{process.returncode}; see "
                                       f"{self.nodes[node_id].log_path}")
            views = {n: v for n, v in self.leader_views().items() if n in node_ids}
            named = set(views.values())
            if len(views) == len(node_ids) and len(named) == 1:
                leader = named.pop()
                if leader is not None and leader in node_ids and leader != exclude:
                    return leader
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        raise TimeoutError(f"no leader among {node_ids} within {timeout} s (views {views}); "
                           f"logs under {self.base_dir}")

    def wait_ready(self, timeout: float = 30.0) -> int:
        """Waits until every running node names the same leader; returns its id."""
        running = [n for n, node in self.nodes.items() if node.running]
        return self.wait_leader(running, timeout=timeout)
