"""LocalClusterTarget: the :class:`~chunkraft.local.rolling_restart.RollTarget` of a LocalCluster.

Its checks ask the nodes over HTTP as the admin, with short timeouts, and never wait: a broker
is registered and unfenced when its ``/broker/v1/status`` says so and the leader's metadata
lists it unfenced; ISR gaps come from the leader's ``POST /controller/v1/metadata`` (the
active chunk's replicas and ISR of every partition, internal topics included), or from any
controller that answers when the leader does not; a controller's offset is the
``metadata_offset`` of its ``/controller/v1/quorum`` status (without the image hash, which
costs a walk of the image). A node whose process exited makes a check raise
:class:`~chunkraft.local.rolling_restart.NodeExited` naming its exit and its log. Not
thread-safe, like the LocalCluster it drives.
"""

from __future__ import annotations

import subprocess
from typing import Any

import httpx

from chunkraft.local.local_cluster import LocalCluster
from chunkraft.local.node_process import BrokerProcess, ControllerProcess
from chunkraft.local.node_watch import exit_status_text
from chunkraft.local.rolling_restart import NodeExited

__all__ = ["LocalClusterTarget"]

CHECK_TIMEOUT = 2.0
"""Seconds one HTTP check may take."""
NO_METADATA = "(no controller answered the metadata request)"


class LocalClusterTarget:
    """The roll's view of ``cluster`` (see the module docstring)."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self._http = httpx.Client(timeout=CHECK_TIMEOUT, headers=cluster.headers,
                                  verify=cluster.verify)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LocalClusterTarget:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------ nodes

    def broker_ids(self) -> list[int]:
        return sorted(self.cluster.broker_nodes)

    def controller_ids(self) -> list[int]:
        return sorted(self.cluster.nodes)

    def running(self, kind: str, node_id: int) -> bool:
        return self._node(kind, node_id).running

    def _node(self, kind: str, node_id: int) -> ControllerProcess | BrokerProcess:
        return self.cluster.broker_nodes[node_id] if kind == "broker" \
            else self.cluster.nodes[node_id]

    def _check_alive(self, kind: str, node_id: int) -> None:
        node = self._node(kind, node_id)
        if node.process is None:
            raise NodeExited("is not running (stopped by someone else)")
        if node.process.poll() is not None:
            raise NodeExited(f"{exit_status_text(node.process.returncode)}; its log: "
                             f"{node.log_path}")

    @staticmethod
    def _ended(process: subprocess.Popen[bytes] | None) -> str:
        if process is None:
            return "was not running"
        return exit_status_text(process.returncode) if process.returncode is not None \
            else "still running"

    # ------------------------------------------------------------------ brokers

    def stop_broker(self, broker_id: int, timeout: float) -> str:
        process = self.cluster.broker_nodes[broker_id].process
        self.cluster.stop_broker(broker_id, timeout=timeout)
        return self._ended(process)

    def start_broker(self, broker_id: int) -> None:
        self.cluster.start_broker(broker_id)

    def broker_registered(self, broker_id: int) -> bool:
        self._check_alive("broker", broker_id)
        status = self.cluster.broker_status(broker_id, timeout=CHECK_TIMEOUT)
        if status is None or status.get("broker_epoch", -1) < 0 or status.get("fenced", True):
            return False
        metadata = self._metadata()
        return metadata is not None and any(
            b.get("node_id") == broker_id and not b.get("fenced", False)
            for b in metadata.get("brokers", ()))

    def isr_gaps(self, broker_id: int, *, others: bool = False) -> list[str]:
        if not others:
            self._check_alive("broker", broker_id)
        metadata = self._metadata()
        if metadata is None:
            return [NO_METADATA]
        gaps = []
        for topic in metadata.get("topics", ()):
            for partition in topic.get("partitions", ()):
                replicas = partition.get("replica_nodes", [])
                if broker_id not in replicas:
                    continue
                isr = set(partition.get("isr_nodes", []))
                missing = set(replicas) - isr if others else {broker_id} - isr
                if missing:
                    gaps.append(f"{topic.get('name')}-{partition.get('partition_index')}")
        return sorted(gaps)

    def _metadata(self) -> dict[str, Any] | None:
        """The leader's Metadata answer for every topic (no inactive chunks), else the first
        running controller's that answers."""
        leader = self.cluster.leader_id(timeout=CHECK_TIMEOUT)
        order = sorted(self.cluster.nodes, key=lambda n: n != leader)
        for node_id in order:
            node = self.cluster.nodes[node_id]
            if not node.running:
                continue
            try:
                answer = self._http.post(f"{node.url}/controller/v1/metadata",
                                         json={"topics": None, "include_chunks": False})
                if answer.status_code == 200:
                    return dict(answer.json())
            except (httpx.HTTPError, ValueError):
                continue
        return None

    # ------------------------------------------------------------------ controllers

    def stop_controller(self, node_id: int, timeout: float) -> str:
        process = self.cluster.nodes[node_id].process
        self.cluster.stop(node_id, timeout=timeout)
        return self._ended(process)

    def start_controller(self, node_id: int) -> None:
        self.cluster.start(node_id)

    def leader_id(self) -> int | None:
        return self.cluster.leader_id(timeout=CHECK_TIMEOUT)

    def controller_ready(self, node_id: int) -> bool:
        self._check_alive("controller", node_id)
        try:
            answer = self._http.get(f"{self.cluster.nodes[node_id].url}/readyz")
        except httpx.HTTPError:
            return False
        return answer.status_code == 200

    def metadata_offset(self, node_id: int) -> int | None:
        self._check_alive("controller", node_id)
        try:
            answer = self._http.get(f"{self.cluster.nodes[node_id].url}/controller/v1/quorum")
            offset = answer.json().get("metadata_offset") if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        return offset if isinstance(offset, int) else None
