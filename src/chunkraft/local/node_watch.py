"""Noticing the nodes of a LocalCluster that died: reaped, described, never left as zombies.

A child that exits stays a zombie until its parent waits on it, and nobody learns it died unless
someone looks. :func:`reap_exited` looks at every node the cluster started, without blocking
(``Popen.poll`` is ``waitpid(pid, WNOHANG)``, so an exited child is reaped the moment it is
seen), and returns one :class:`NodeExit` per node that exited since the last look; the node's
``process`` is then None, so a later stop never signals a PID the system may have given to
another process, and :meth:`LocalCluster.start` / :meth:`LocalCluster.start_broker` start it
again. ``chunkraft cluster`` calls it every half second while it serves and prints
:meth:`NodeExit.describe` to stderr. Not thread-safe: call it from the thread that owns the
cluster.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chunkraft.local.local_cluster import LocalCluster

__all__ = ["NodeExit", "exit_status_text", "reap_exited"]


def exit_status_text(returncode: int) -> str:
    """``Popen.returncode`` in words: ``exited with status 1`` or ``killed by signal 9
    (SIGKILL)`` (a negative return code is the signal that ended the process)."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:  # a real-time or unnamed signal
        return f"killed by signal {number}"
    return f"killed by signal {number} ({name})"


@dataclass(frozen=True, slots=True)
class NodeExit:
    """A node of the cluster that exited: which, its PID, how it ended, where its log is."""

    kind: str
    """``controller`` or ``broker``."""
    node_id: int
    pid: int
    returncode: int
    log_path: Path

    @property
    def name(self) -> str:
        """``controller 2`` or ``broker 1``, as the cluster's other output names nodes."""
        return f"{self.kind} {self.node_id}"

    def describe(self) -> str:
        """One line for an operator: ``broker 1 (pid 4242) died: killed by signal 9
        (SIGKILL); its log: DIR/broker-1/broker.log``."""
        return (f"{self.name} (pid {self.pid}) died: {exit_status_text(self.returncode)}; "
                f"its log: {self.log_path}")


def reap_exited(cluster: LocalCluster) -> list[NodeExit]:
    """Every node of ``cluster`` whose process exited since the last call, controllers first,
    each reaped and forgotten (its ``process`` set to None). Never blocks; never signals."""
    exits: list[NodeExit] = []
    for node in cluster.nodes.values():
        if node.process is not None and node.process.poll() is not None:
            exits.append(NodeExit("controller", node.node_id, node.process.pid,
                                  node.process.returncode, node.log_path))
            node.process = None
    for broker in cluster.broker_nodes.values():
        if broker.process is not None and broker.process.poll() is not None:
            exits.append(NodeExit("broker", broker.broker_id, broker.process.pid,
                                  broker.process.returncode, broker.log_path))
            broker.process = None
    return exits
